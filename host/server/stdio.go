package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/sdk/mcpwire"
)

// MaxLineBytes bounds one inbound JSON-RPC message on stdio (16 MiB). A
// longer line is answered with an error and skipped.
const MaxLineBytes = 16 << 20

// LineTransport is an MCP stdio transport (MCP 2025-11-25, basic/transports
// §stdio): newline-delimited JSON-RPC messages. Unlike the go-sdk's
// StdioTransport, which ends the session at the first line it cannot
// decode, it answers such a line with a JSON-RPC error (-32700 for invalid
// JSON, -32600 for JSON that is not a JSON-RPC message) and keeps reading.
type LineTransport struct {
	// In is read for incoming messages.
	In io.Reader
	// Out receives outgoing messages, one per line; nothing else is ever
	// written to it.
	Out io.Writer
	// OnEOF, when set, is called once In reaches its end, before the
	// connection waits for the answers to requests already read (MCP
	// stdio shutdown starts with the client closing the server's stdin).
	OnEOF func()
	// DrainTimeout bounds that wait: once it passes, the connection ends
	// even if some request was never answered. Zero waits for every
	// answer.
	DrainTimeout time.Duration
}

// Connect implements [mcp.Transport].
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{
		out:      t.Out,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
	}
	c.drained = sync.NewCond(&c.pendingMu)
	if cl, ok := t.In.(io.Closer); ok {
		c.in = cl
	}
	c.onEOF = t.OnEOF
	c.drainTimeout = t.DrainTimeout
	c.inflight = map[string]bool{}
	c.original = map[string]json.RawMessage{}
	go c.readLoop(t.In)
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in           io.Closer
	out          io.Writer
	onEOF        func()
	drainTimeout time.Duration

	writeMu  sync.Mutex
	incoming chan readResult

	// pending counts requests handed to the server and not answered yet,
	// so that end of input waits for their responses: a client that
	// writes its requests and closes stdin still gets every answer.
	pendingMu sync.Mutex
	pending   int
	drained   *sync.Cond
	gaveUp    bool // the drain timeout passed

	// inflight holds the keys ([idKey]) of the client's requests not
	// answered yet, to refuse a second request with the same id. original
	// maps the key of an id given to the server in place of one the
	// go-sdk would not send back exactly (1.5, 12345678901234567890) to
	// the id as the client wrote it. Both are guarded by idsMu.
	idsMu    sync.Mutex
	inflight map[string]bool
	original map[string]json.RawMessage
	nextID   uint64

	closeOnce sync.Once
	closed    chan struct{}
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) readLoop(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				long = append(long, chunk...)
				if len(long) > MaxLineBytes {
					tooLong, long = true, nil
				}
			}
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if tooLong {
			tooLong = false
			c.writeError(nil, -32600, fmt.Sprintf("message larger than %d bytes; it was skipped", MaxLineBytes))
		} else if msg, raw, ok := c.decode(line); ok {
			req, isReq := msg.(*jsonrpc.Request)
			if isReq && req.ID.IsValid() && !c.admit(req, bytes.TrimSpace(raw)) {
				goto next
			}
			if isReq && !req.ID.IsValid() && req.Method == "notifications/cancelled" {
				c.translateCancel(req)
			}
			// Counted before the hand-over, so that end of input, read
			// right after, cannot miss it.
			if isReq && req.ID.IsValid() {
				c.pendingMu.Lock()
				c.pending++
				c.pendingMu.Unlock()
			}
			select {
			case c.incoming <- readResult{msg: msg}:
			case <-c.closed:
				return
			}
		}
	next:
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
				if c.onEOF != nil {
					c.onEOF()
				}
				c.waitDrained()
			}
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// decode returns the message on line and its id as the client wrote it,
// or answers the line with an error and reports false. Blank lines are
// skipped silently. The line is parsed once ([mcpwire.Decode]).
func (c *lineConn) decode(line []byte) (jsonrpc.Message, json.RawMessage, bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, nil, false
	}
	msg, id, err := mcpwire.Decode(line)
	if err != nil {
		var we *mcpwire.Error
		if errors.As(err, &we) {
			c.writeError(id, we.Code, we.Message)
		}
		return nil, nil, false
	}
	return msg, id, true
}

// writeError writes a JSON-RPC error response with the given id (null
// when the id could not be read).
func (c *lineConn) writeError(id json.RawMessage, code int, message string) {
	if len(id) == 0 || !(id[0] == '"' || (id[0] >= '0' && id[0] <= '9') || id[0] == '-') {
		id = json.RawMessage("null")
	}
	resp, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	_ = c.writeLine(resp)
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		return r.msg, r.err
	}
}

// answered records a response written to the client.
func (c *lineConn) answered() {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if c.pending > 0 {
		c.pending--
	}
	if c.pending == 0 {
		c.drained.Broadcast()
	}
}

// waitDrained blocks until every request read so far has been answered,
// the connection is closed, or the drain timeout (when set) passes.
func (c *lineConn) waitDrained() {
	if c.drainTimeout > 0 {
		t := time.AfterFunc(c.drainTimeout, func() {
			c.pendingMu.Lock()
			c.gaveUp = true
			c.drained.Broadcast()
			c.pendingMu.Unlock()
		})
		defer t.Stop()
	}
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	for c.pending > 0 && !c.gaveUp {
		select {
		case <-c.closed:
			return
		default:
		}
		c.drained.Wait()
	}
}

// idKey identifies a request id for duplicate detection: its JSON text as
// the client wrote it.
func idKey(raw json.RawMessage) string { return string(raw) }

// admit registers the id of req, raw as the client wrote it, as in flight. A second
// request with the id of one still running is answered with -32600 and
// refused (false). An id the go-sdk would not send back exactly (a
// fraction, or an integer beyond what a float64 holds) is replaced, for
// the server, by one it does, and restored in the answer.
func (c *lineConn) admit(req *jsonrpc.Request, raw json.RawMessage) bool {
	key := idKey(raw)
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	if c.inflight[key] {
		c.writeError(raw, -32600, fmt.Sprintf("invalid request: id %s is already used by a request that is still running; give each request its own id", raw))
		return false
	}
	c.inflight[key] = true
	if string(raw) != string(encodedID(req.ID)) {
		c.nextID++
		inner, _ := jsonrpc.MakeID(fmt.Sprintf("openhuman-id-%d", c.nextID))
		c.original[idKey(encodedID(inner))] = raw
		req.ID = inner
	}
	return true
}

// translateCancel points a notifications/cancelled at the id the server
// knows for the request, when admit replaced it.
func (c *lineConn) translateCancel(req *jsonrpc.Request) {
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil || len(p["requestId"]) == 0 {
		return
	}
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	for inner, raw := range c.original {
		if string(raw) == string(p["requestId"]) {
			p["requestId"] = json.RawMessage(inner)
			if b, err := json.Marshal(p); err == nil {
				req.Params = b
			}
			return
		}
	}
}

// answeredID ends the id of a response the server wrote and returns the
// id to send: the client's own when admit replaced it.
func (c *lineConn) answeredID(id jsonrpc.ID) (json.RawMessage, bool) {
	enc := encodedID(id)
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	if raw, ok := c.original[idKey(enc)]; ok {
		delete(c.original, idKey(enc))
		delete(c.inflight, idKey(raw))
		return raw, true
	}
	delete(c.inflight, idKey(enc))
	return nil, false
}

// encodedID is id as the go-sdk writes it.
func encodedID(id jsonrpc.ID) json.RawMessage {
	b, _ := json.Marshal(id.Raw())
	return b
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp {
		if raw, ok := c.answeredID(resp.ID); ok {
			data = withID(data, raw)
		}
	}
	err = c.writeLine(data)
	if isResp {
		c.answered()
	}
	return err
}

// withID returns the encoded response data with its id replaced by raw.
func withID(data []byte, raw json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	m["id"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}

func (c *lineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	buf := make([]byte, 0, len(data)+1)
	buf = append(append(buf, data...), '\n')
	if _, err := c.out.Write(buf); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.pendingMu.Lock()
		c.drained.Broadcast()
		c.pendingMu.Unlock()
		if c.in != nil {
			_ = c.in.Close()
		}
	})
	return nil
}

var _ mcp.Transport = (*LineTransport)(nil)
