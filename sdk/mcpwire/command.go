package mcpwire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CommandTransport is an [mcp.Transport] that runs a stdio MCP server
// (MCP 2025-11-25 basic/transports §stdio) and speaks to it one message
// per line, as the go-sdk's mcp.CommandTransport does, but decodes each
// line once with [Decode]: the go-sdk's stdio connection decodes every
// message three times through a decoder that allocates 32 KiB each time.
type CommandTransport struct {
	// Cmd is the server's command, not started yet; its Stdin and Stdout
	// must be unset (Connect takes them), its Stderr is the caller's.
	Cmd *exec.Cmd
	// Terminate is how long the server gets to exit after its stdin
	// closes, and again after SIGTERM, before it is killed; zero means
	// 5 s.
	Terminate time.Duration
}

// Connect starts the command; an error says which of its pipes or its
// start failed, wrapping os/exec's error. The connection ends the server
// when it is closed ([mcp.Connection.Close]); a line the server writes
// that is not a JSON-RPC message, or is longer than
// mcp.DefaultMaxLineLength, ends the connection with an error, as with
// the go-sdk's transport. The context is not used: starting a command
// does not block.
func (t *CommandTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.Cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("connect to the server's stdout: %w", err)
	}
	stdin, err := t.Cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("connect to the server's stdin: %w", err)
	}
	if err := t.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server: %w", err)
	}
	terminate := t.Terminate
	if terminate <= 0 {
		terminate = 5 * time.Second
	}
	c := &lineClientConn{
		cmd:       t.Cmd,
		stdin:     stdin,
		terminate: terminate,
		incoming:  make(chan readResult),
		closed:    make(chan struct{}),
	}
	go c.readLoop(stdout)
	return c, nil
}

// readResult is one message read from the server, or why reading ended.
type readResult struct {
	msg jsonrpc.Message
	err error
}

// lineClientConn is the client's side of a stdio server's pipes.
type lineClientConn struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration

	writeMu  sync.Mutex
	incoming chan readResult

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

func (c *lineClientConn) SessionID() string { return "" }

// readLoop hands each line the server writes to Read. A line longer than
// mcp.DefaultMaxLineLength, or one that is not a JSON-RPC message, ends
// the connection, as with the go-sdk's transport; blank lines are
// skipped.
func (c *lineClientConn) readLoop(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			if len(long) > mcp.DefaultMaxLineLength {
				c.deliver(readResult{err: fmt.Errorf("the server wrote a line longer than %d bytes", mcp.DefaultMaxLineLength)})
				return
			}
			continue
		}
		line := chunk
		if long != nil {
			line, long = append(long, chunk...), nil
		}
		if len(trimSpace(line)) > 0 {
			msg, _, derr := Decode(line)
			if derr != nil {
				c.deliver(readResult{err: fmt.Errorf("the server wrote something that is not a JSON-RPC message: %w", derr)})
				return
			}
			if !c.deliver(readResult{msg: msg}) {
				return
			}
		}
		if err != nil {
			c.deliver(readResult{err: err})
			return
		}
	}
}

// trimSpace is line without its leading and trailing JSON white space.
func trimSpace(line []byte) []byte {
	isSpace := func(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }
	for len(line) > 0 && isSpace(line[0]) {
		line = line[1:]
	}
	for len(line) > 0 && isSpace(line[len(line)-1]) {
		line = line[:len(line)-1]
	}
	return line
}

// deliver hands r to Read; false once the connection is closed.
func (c *lineClientConn) deliver(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

func (c *lineClientConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		return r.msg, r.err
	}
}

func (c *lineClientConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	if _, err := c.stdin.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write to the server's stdin: %w", err)
	}
	return nil
}

// Close shuts the server down as MCP's stdio transport asks: its stdin is
// closed, then it gets terminate to exit, then SIGTERM (where there is
// one) and terminate again, then it is killed.
func (c *lineClientConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.writeMu.Lock()
		_ = c.stdin.Close()
		c.writeMu.Unlock()
		exited := make(chan error, 1)
		go func() { exited <- c.cmd.Wait() }()
		wait := func() (error, bool) {
			t := time.NewTimer(c.terminate)
			defer t.Stop()
			select {
			case err := <-exited:
				return err, true
			case <-t.C:
				return nil, false
			}
		}
		if err, ok := wait(); ok {
			c.closeErr = exitError(err)
			return
		}
		if c.cmd.Process.Signal(terminateSignal) == nil {
			if err, ok := wait(); ok {
				c.closeErr = exitError(err)
				return
			}
		}
		_ = c.cmd.Process.Kill()
		if _, ok := wait(); !ok {
			c.closeErr = errors.New("the server did not exit after it was killed")
		}
	})
	return c.closeErr
}

// exitError is nil for a server that exited on its own once its stdin
// closed, whatever its status: that is how stdio servers end.
func exitError(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil
	}
	return err
}

// terminateSignal asks a process to exit. Windows has no such signal:
// there Signal fails and the server is killed at once.
var terminateSignal os.Signal = syscall.SIGTERM
