package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Setup builds every exporter without failing (a receiver that is down
// costs dropped batches, not a start), and a Prometheus handler that
// answers.
func TestSetup(t *testing.T) {
	tel, err := Setup(t.Context(), Config{Traces: true, Metrics: true, Prometheus: true, Endpoint: "http://127.0.0.1:1",
		ServiceName: "test", ServiceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing can be flushed to port 1: do not wait
		_ = tel.Shutdown(ctx)
	}()
	if !tel.Tracing() || !tel.Measuring() || tel.PrometheusHandler() == nil {
		t.Fatalf("Setup = tracing %v, measuring %v, prometheus %v; want all on", tel.Tracing(), tel.Measuring(), tel.PrometheusHandler() != nil)
	}
	rec := httptest.NewRecorder()
	tel.PrometheusHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "target_info") {
		t.Errorf("GET /metrics = %d %q", rec.Code, rec.Body.String())
	}
	env := strings.Join(tel.ProviderEnv(), " ")
	for _, want := range []string{EnvTraces + "=1", "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"} {
		if !strings.Contains(env, want) {
			t.Errorf("ProviderEnv() = %q, want %q", env, want)
		}
	}
}

func TestSetupOff(t *testing.T) {
	tel, err := Setup(t.Context(), Config{})
	if err != nil || tel.Tracing() || tel.Measuring() || tel.PrometheusHandler() != nil || tel.ProviderEnv() != nil {
		t.Fatalf("Setup(off) = %+v, %v; want everything off", tel, err)
	}
	var none *Telemetry
	if none.Tracing() || none.Shutdown(t.Context()) != nil {
		t.Errorf("a nil Telemetry is not off")
	}
}

func TestSetupRefuses(t *testing.T) {
	for _, c := range []Config{
		{Traces: true, Protocol: "zipkin"},
		{Traces: true, Endpoint: "http://user:secret@collector:4318"},
		{Traces: true, SampleRatio: 2},
	} {
		if _, err := Setup(t.Context(), c); err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("Setup(%+v) = %v; want an error that does not repeat secrets", c, err)
		}
	}
}
