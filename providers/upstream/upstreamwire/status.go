package upstreamwire

import "time"

// Server states, as [ServerStatus].State reports them.
const (
	StateConnecting = "connecting"
	StateConnected  = "connected"
	StateFailed     = "failed"
)

// StatusURI is the resource the host reads from the upstream provider,
// never listed to clients: a JSON array of [ServerStatus], one per enabled
// server in config order. `providers status` and the unknown-tool error say
// from it per server what is wrong.
const StatusURI = "openhuman-upstream:servers"

// ServerStatus is the state of one enabled server: of the session its
// catalog is read from (a client's, else the shared one).
type ServerStatus struct {
	// Name is the server's name in [[upstream.servers]].
	Name string `json:"name"`
	// State is StateConnecting, StateConnected or StateFailed.
	State string `json:"state"`
	// Error is why the last attempt to connect failed (endpoints and
	// secrets redacted); "" unless State is StateFailed.
	Error string `json:"error,omitempty"`
	// Attempts counts the failed attempts since the last success.
	Attempts int `json:"attempts,omitempty"`
	// NextAttempt is when a failed server is tried again; zero when it is
	// not (connected, connecting, or unable to start).
	NextAttempt time.Time `json:"next_attempt,omitzero"`
}
