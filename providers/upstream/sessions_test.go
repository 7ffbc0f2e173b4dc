package upstream

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/openhuman/openhuman-host/sdk"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestManyClientsLoseNoCalls has 64 clients call one stdio server at once,
// four times the sessions kept while unused: sessions are closed only when
// no request holds them, so no call fails.
func TestManyClientsLoseNoCalls(t *testing.T) {
	host := newFakeHost()
	p, _ := configure(t, host, map[string]any{"name": "local", "command": stdioServer})
	const (
		clients = 64
		calls   = 8
	)
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls)
	for c := range clients {
		wg.Go(func() {
			for i := range calls {
				res, err := p.CallTool(testwait.Context(t), &sdk.CallToolRequest{Name: "local__echo",
					Arguments: json.RawMessage(fmt.Sprintf(`{"text":"c%d-%d"}`, c, i)), Caller: caller(fmt.Sprintf("client-%d", c), fmt.Sprintf("%d-%d", c, i))})
				switch {
				case err != nil:
					errs <- fmt.Errorf("client %d call %d: %w", c, i, err)
				case res.IsError || res.Text() != fmt.Sprintf("stdio:c%d-%d", c, i):
					errs <- fmt.Errorf("client %d call %d: %s", c, i, res.Text())
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d calls failed", n, clients*calls)
	}
}

// TestIdleClientSessionsAreClosed: a client that stops calling has its own
// session with a stdio server (and the server's process) closed after
// session_idle_secs, without another client coming along.
func TestIdleClientSessionsAreClosed(t *testing.T) {
	host := newFakeHost()
	p, _ := configure(t, host, map[string]any{"name": "local", "command": stdioServer, "session_idle_secs": 1})
	callEcho(t, p, "local")
	p.mu.RLock()
	c := p.clients["local\x00A"]
	p.mu.RUnlock()
	if c == nil {
		t.Fatal("the client has no session of its own")
	}
	testwait.Until(t, "the idle session to be closed", func() bool {
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.clients["local\x00A"] == nil
	})
	testwait.Until(t, "its server process to end", func() bool { return !c.conn.alive() })
}
