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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	go c.readLoop(t.In)
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in    io.Closer
	out   io.Writer
	onEOF func()

	writeMu  sync.Mutex
	incoming chan readResult

	// pending counts requests handed to the server and not answered yet,
	// so that end of input waits for their responses: a client that
	// writes its requests and closes stdin still gets every answer.
	pendingMu sync.Mutex
	pending   int
	drained   *sync.Cond

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
		} else if msg, ok := c.decode(line); ok {
			// Counted before the hand-over, so that end of input, read
			// right after, cannot miss it.
			if req, isReq := msg.(*jsonrpc.Request); isReq && req.ID.IsValid() {
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

// decode returns the message on line, or answers the line with an error
// and reports false. Blank lines are skipped silently.
func (c *lineConn) decode(line []byte) (jsonrpc.Message, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	if !json.Valid(line) {
		c.writeError(nil, -32700, "parse error: the line is not valid JSON; send one JSON-RPC message per line")
		return nil, false
	}
	if line[0] == '[' {
		c.writeError(nil, -32600, "invalid request: batches are not supported; send one JSON-RPC message per line")
		return nil, false
	}
	if hasNullID(line) {
		c.writeError(nil, -32600, "invalid request: the id must be a string or a number, not null")
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		c.writeError(probe.ID, -32600, fmt.Sprintf("invalid request: %v", err))
		return nil, false
	}
	return msg, true
}

// hasNullID reports whether line is an object with "id": null, which the
// JSON-RPC decoder would take for a notification. The full parse runs only
// for lines that could have one.
func hasNullID(line []byte) bool {
	if !bytes.Contains(line, []byte("null")) || !bytes.Contains(line, []byte(`"id"`)) {
		return false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(line, &probe) != nil {
		return false
	}
	id, ok := probe["id"]
	return ok && string(id) == "null"
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

// waitDrained blocks until every request read so far has been answered or
// the connection is closed. A request that never completes is bounded by
// the tool timeout, and SIGTERM still stops the process.
func (c *lineConn) waitDrained() {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	for c.pending > 0 {
		select {
		case <-c.closed:
			return
		default:
		}
		c.drained.Wait()
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = c.writeLine(data)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.answered()
	}
	return err
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
