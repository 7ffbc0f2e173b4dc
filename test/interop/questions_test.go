package interop_test

import (
	"fmt"
	"testing"
)

// TestClientQuestions: the TypeScript SDK's v2 client, on protocol
// 2026-07-28 (questions as input_required results it answers and
// retries) and on 2025-11-25 (questions as requests during the call),
// over stdio and Streamable HTTP, with form elicitation and sampling:
// an act is confirmed before it runs and refused when declined, a
// sub-agent runs on the client's own model, and an upstream server's
// elicitation reaches the client and its answer the server
// (client-mrtr.mjs holds the checks).
func TestClientQuestions(t *testing.T) {
	p := requireInterop(t)
	t.Parallel()
	everything := buildEverythingServer(t)
	config := fmt.Sprintf("[autonomy]\nlevel = \"supervised\"\nconfirm_acts = \"when_supported\"\n\n"+
		"[[upstream.servers]]\nname = \"conformance\"\ncommand = %q\nprefix = \"up_\"\n", everything)
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(rev+"/stdio", func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			sb.writeConfig(t, config)
			tree := runScript(t, p, sb, "client-mrtr.mjs", true, nil, rev, "stdio", p.bin, "serve")
			tree.requireExited(t)
		})
		t.Run(rev+"/http", func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t)
			sb.writeConfig(t, config)
			srv := startHTTPServer(t, p, sb)
			runScript(t, p, sb, "client-mrtr.mjs", false, nil, rev, "http", srv.url)
			srv.stop(t, "sigterm")
		})
	}
}
