// Command floor is the benchmark's reference point: the go-sdk serving one
// no-op tool over stdio, or with -http ADDR over Streamable HTTP at
// http://ADDR/, with nothing in between. The benchmark builds and starts
// it; it is not meant to be run by hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/bench/internal/noop"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this loopback address instead of stdio")
	flag.Parse()
	srv := noop.NewFloorServer()
	var err error
	if *addr == "" {
		err = srv.Run(context.Background(), &mcp.StdioTransport{})
	} else {
		handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		hs := &http.Server{Addr: *addr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		if err = hs.ListenAndServe(); errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
