// Command provider-hello is a minimal openhuman-host provider, written as
// a starting point for your own. It serves two tools and one resource:
//
//   - hello_greet (read): greets someone by name, in English, French or
//     German;
//   - hello_count (act): adds to a counter kept in the provider's data
//     directory, reporting progress on the way;
//   - hello://readme: a Markdown description of the two tools.
//
// Build it and load it into the host:
//
//	cd examples/provider-hello && go build -o provider-hello .
//	openhuman-host providers add ./provider-hello
//	openhuman-host tools call hello_greet '{"name":"Ada","language":"fr"}'
//
// or add the table by hand to the host's config file:
//
//	[providers.hello]
//	command = "/absolute/path/to/provider-hello"
//	sha256 = "<the output of sha256sum provider-hello>"
//	greeting_suffix = " :)" # optional, at most 20 characters
//
// The host starts the executable itself; run by hand, it prints a notice
// and exits with status 1, unless OPENHUMAN_PROVIDER_DEBUG=hello asks for
// debug mode (see sdk.WithDebug). docs/writing-a-provider.md walks
// through it. This directory is a module of its own that requires only
// the SDK module.
package main

import "github.com/openhuman/openhuman-host/sdk"

func main() {
	log := sdk.Logger("hello")
	sdk.Serve(newHello(log), sdk.WithLogger(log))
}
