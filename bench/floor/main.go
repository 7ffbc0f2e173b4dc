// Command floor is the benchmark's reference point: the go-sdk serving one
// no-op tool over stdio, with nothing in between. The benchmark builds and
// starts it; it is not meant to be run by hand.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-host/bench/internal/noop"
)

func main() {
	if err := noop.NewFloorServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
