package searxng

import "github.com/openhuman/openhuman-host/providers/searxng/searxngtool"

// Tool names served by the searxng provider, as clients see them; [searxngtool] holds
// them for code outside the provider.
const (
	ToolSearch = searxngtool.Search
)
