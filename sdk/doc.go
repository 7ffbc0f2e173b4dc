// Package sdk is the public API for writing openhuman-host providers in Go.
//
// A provider is a separate process that the host launches with
// github.com/hashicorp/go-plugin and talks to over gRPC. It contributes MCP
// tools (and resources) to the host's catalog; the host validates every call
// against the tool's input schema, applies its SecurityPolicy, dispatches the
// call to the provider and records an audit row. A provider implements
// [Provider] and hands it to [Serve] from its main function:
//
//	func main() {
//		sdk.Serve(&myProvider{})
//	}
//
// The contract is defined in sdk/proto/openhuman/provider/v1/provider.proto,
// so providers can also be written in any language with gRPC support; this
// package's types mirror that file without exposing protobuf types.
//
// Package sdktest runs a provider in-process, through the real gRPC adapter,
// for unit tests, and checks arguments and results as the host does.
//
// The module also holds libraries the built-in providers use and others
// may; a provider that does not import one builds none of its
// dependencies: sdk/mcpwire (a stdio MCP client transport that decodes
// each message once), sdk/storage and its subpackages (the shared
// PostgreSQL database, migrations, SQLite files and locks) and
// sdk/embeddings (an OpenAI-compatible embeddings client).
//
// docs/writing-a-provider.md in the repository walks from an empty module
// to a provider loaded by the host; examples/provider-hello is a complete
// provider with tests.
package sdk
