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
	tests := map[string]struct {
		cfg      Config
		wantGRPC bool
		wantURL  string
	}{
		"http":             {cfg: Config{Endpoint: "http://collector:4318"}, wantURL: "http://collector:4318/v1/traces"},
		"http, trailing /": {cfg: Config{Endpoint: "https://collector/otlp/", Protocol: ProtocolHTTP}, wantURL: "https://collector/otlp/v1/traces"},
		"http, unset":      {cfg: Config{}, wantURL: ""},
		"grpc":             {cfg: Config{Endpoint: "http://collector:4317/", Protocol: ProtocolGRPC}, wantGRPC: true, wantURL: "http://collector:4317/"},
		"grpc, unset":      {cfg: Config{Protocol: ProtocolGRPC}, wantGRPC: true, wantURL: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var gotGRPC bool
			var gotURL string
			record := func(grpc bool) func(string) (string, error) {
				return func(url string) (string, error) {
					gotGRPC, gotURL = grpc, url
					return "exporter", nil
				}
			}
			exp, err := otlpExporter(tc.cfg, "trace", "/v1/traces", record(true), record(false))
			if err != nil || exp != "exporter" {
				t.Fatalf("otlpExporter() = %q, %v; want the exporter", exp, err)
			}
			if gotGRPC != tc.wantGRPC || gotURL != tc.wantURL {
				t.Errorf("made grpc=%v with %q, want grpc=%v with %q", gotGRPC, gotURL, tc.wantGRPC, tc.wantURL)
			}
		})
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
