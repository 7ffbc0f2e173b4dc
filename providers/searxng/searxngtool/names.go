// Package searxngtool names the searxng provider's tools, as clients see them. It
// holds only constants, so that tests and tools outside the provider can
// name its tools without importing the provider itself; the provider's
// own Tool* constants are these.
package searxngtool

// Search is the name of the provider's one tool, as clients see it:
// it searches the web through the configured SearXNG instance.
const Search = "searxng_search"
