package plugins

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// recordFailureLocked adds a failure at now to the sliding window and
// returns how many it holds. p.mu must be held.
func (p *Provider) recordFailureLocked(now time.Time) int {
	kept := p.failures[:0]
	for _, t := range p.failures {
		if now.Sub(t) < p.m.opts.Restart.Window {
			kept = append(kept, t)
		}
	}
	p.failures = append(kept, now)
	return len(p.failures)
}

// supervise watches the running instance and restarts it when it exits or
// fails two health checks in a row, until close or a permanent failure.
func (p *Provider) supervise() {
	defer close(p.done)
	health := time.NewTicker(p.m.opts.HealthInterval)
	defer health.Stop()
	misses := 0
	var answered uint64 // inst.answered at the last health check
	for {
		inst, err := p.current()
		if err != nil {
			return
		}
		p.mu.Lock()
		giveUp := p.giveUp
		p.mu.Unlock()
		if giveUp != "" {
			p.fail(inst, giveUp)
			return
		}
		var reason string
		select {
		case <-p.stop:
			return
		case <-p.kick:
			if p.refresh.Swap(false) {
				p.describeAgain(inst)
			}
			continue
		case <-inst.gone():
			reason = "its process exited"
		case <-health.C:
			err := p.healthCheck(inst)
			now := inst.answered.Load()
			progressed := now != answered
			answered = now
			switch {
			case err != nil && progressed:
				// Busy, not dead: it answered calls since the last check.
				p.log.Debug("health check failed while the provider answers calls; not counted", "pid", inst.pid, "error", err)
				misses = 0
			case err != nil:
				misses++
				p.log.Warn("health check failed", "pid", inst.pid, "misses", misses, "error", err)
				if misses >= 2 {
					reason = fmt.Sprintf("it failed two health checks and answered nothing in between (%v)", err)
				}
			default:
				misses = 0
			}
		}
		if reason == "" {
			continue
		}
		misses = 0
		if !p.restart(inst, reason) {
			return
		}
		health.Reset(p.m.opts.HealthInterval)
	}
}

// healthCheck asks the provider's gRPC health service (which go-plugin
// serves in every Go plugin) whether it serves; a provider run in the
// host's process always does.
func (p *Provider) healthCheck(inst *instance) error {
	if inst.local != nil {
		// Code of the host's own process: while the host runs, it does.
		return nil
	}
	g, ok := inst.rpc.(*plugin.GRPCClient)
	if !ok {
		return inst.rpc.Ping()
	}
	ctx, cancel := context.WithTimeout(p.m.ctx, p.m.opts.HealthTimeout)
	defer cancel()
	res, err := grpc_health_v1.NewHealthClient(g.Conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
	if err != nil {
		return err
	}
	if res.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return fmt.Errorf("health status %s", res.GetStatus())
	}
	return nil
}

// restart replaces the dead instance old, retrying with backoff. It
// returns false when the provider is marked failed or the manager closes.
func (p *Provider) restart(old *instance, reason string) bool {
	p.mu.Lock()
	if p.state == StateStopped {
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	p.log.Error("provider stopped; restarting it", "pid", old.pid, "reason", reason)
	p.mu.Lock()
	if p.inst == old {
		p.inst = nil
	}
	p.state, p.since, p.lastErr = StateRestarting, time.Now(), reason
	p.mu.Unlock()
	p.notify(false)
	old.kill(p.log)
	policy := p.m.opts.Restart
	for {
		now := time.Now()
		p.mu.Lock()
		n := p.recordFailureLocked(now)
		if n >= policy.MaxFailures {
			p.state, p.since = StateFailed, now
			last := p.lastErr
			p.mu.Unlock()
			p.log.Error("provider failed too often; not restarting it again", "failures", n, "window", policy.Window, "last_error", last)
			p.notify(false)
			return false
		}
		p.mu.Unlock()
		if d := policy.backoff(n); d > 0 {
			p.log.Info("restarting provider after backoff", "delay", d, "failures", n)
			select {
			case <-time.After(d):
			case <-p.stop:
				return false
			}
		}
		inst, cat, err := p.m.launch(p.m.ctx, p)
		if err != nil {
			select {
			case <-p.stop:
				return false
			default:
			}
			p.log.Error("provider restart failed", "error", err)
			p.mu.Lock()
			p.lastErr = "restart failed: " + err.Error()
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		if p.state == StateStopped {
			p.mu.Unlock()
			inst.kill(p.log)
			return false
		}
		changed := !reflect.DeepEqual(p.catalog, cat)
		p.inst, p.catalog, p.state, p.since = inst, cat, StateRunning, time.Now()
		p.restarts++
		p.mu.Unlock()
		p.log.Info("provider restarted", "pid", inst.pid, "catalog_changed", changed)
		p.notify(changed)
		return true
	}
}

// fail marks the provider failed for reason and stops inst.
func (p *Provider) fail(inst *instance, reason string) {
	p.mu.Lock()
	if p.inst == inst {
		p.inst = nil
	}
	p.state, p.since, p.lastErr = StateFailed, time.Now(), reason
	p.mu.Unlock()
	p.log.Error("provider failed too often; stopping it", "reason", reason)
	inst.kill(p.log)
	p.notify(false)
}

func (p *Provider) notify(catalogChanged bool) {
	if p.m.opts.OnChange != nil {
		p.m.opts.OnChange(p, catalogChanged)
	}
}

// close stops the provider: new calls fail at once, calls already
// running get up to grace to finish, then the supervisor and the process
// stop.
func (p *Provider) close(grace time.Duration) {
	p.once.Do(func() {
		p.mu.Lock()
		p.state, p.since = StateStopped, time.Now()
		inst := p.inst
		p.mu.Unlock()
		if grace > 0 {
			done := make(chan struct{})
			go func() {
				p.inflight.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(grace):
				p.log.Warn("calls still running when the provider was stopped", "grace", grace)
			}
		}
		p.mu.Lock()
		p.inst = nil
		p.mu.Unlock()
		close(p.stop)
		<-p.done
		if inst != nil {
			inst.kill(p.log)
		}
	})
}
