package telemetry

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestOTLPExporterEndpoint: gRPC gets the endpoint as it is, HTTP gets
// the signal's path under it, and an unset endpoint is left to the SDK.
func TestOTLPExporterEndpoint(t *testing.T) {
	t.Parallel()
	for cfg, want := range map[Config]string{
		{Endpoint: "http://collector:4318"}:                           "http http://collector:4318/v1/traces",
		{Endpoint: "https://collector/otlp/", Protocol: ProtocolHTTP}: "http https://collector/otlp/v1/traces",
		{}: "http ",
		{Endpoint: "http://collector:4317/", Protocol: ProtocolGRPC}: "grpc http://collector:4317/",
		{Protocol: ProtocolGRPC}:                                     "grpc ",
	} {
		var got string
		made := func(protocol string) func(string) (string, error) {
			return func(url string) (string, error) {
				got = protocol + " " + url
				return "exporter", nil
			}
		}
		if exp, err := otlpExporter(cfg, "trace", "/v1/traces", made("grpc"), made("http")); err != nil || exp != "exporter" {
			t.Errorf("otlpExporter(%+v) = %q, %v; want the exporter", cfg, exp, err)
		}
		if got != want {
			t.Errorf("otlpExporter(%+v) made %q, want %q", cfg, got, want)
		}
	}

	boom := errors.New("boom")
	fail := func(string) (string, error) { return "half-made", boom }
	exp, err := otlpExporter(Config{}, "metric", "/v1/metrics", fail, fail)
	if exp != "" || !errors.Is(err, boom) || err.Error() != "telemetry: OTLP metric exporter: boom" {
		t.Errorf("otlpExporter() of a failing constructor = %q, %v; want no exporter and the wrapped error", exp, err)
	}
}

// TestHTTPExportersPost: the HTTP exporters send spans and metrics to
// their paths under the configured endpoint.
func TestHTTPExportersPost(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.Method + " " + r.URL.Path
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	cfg := Config{Endpoint: srv.URL + "/otlp/"}

	spans, err := traceExporter(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := spans.ExportSpans(t.Context(), tracetest.SpanStubs{{Name: "call"}}.Snapshots()); err != nil {
		t.Fatalf("ExportSpans() error: %v", err)
	}
	if err := spans.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	metrics, err := metricExporter(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := metrics.Export(t.Context(), &metricdata.ResourceMetrics{}); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	if err := metrics.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	close(paths)
	var got []string
	for p := range paths {
		got = append(got, p)
	}
	if want := []string{"POST /otlp/v1/traces", "POST /otlp/v1/metrics"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("requests = %q, want %q", got, want)
	}
}
