package searxng

// ToolSearch is the name of the provider's one tool, as clients see it:
// it searches the web through the configured SearXNG instance.
const ToolSearch = "searxng_search"
