package memory

import "github.com/openhuman/openhuman-host/providers/memory/memorytool"

// Tool names served by the memory provider, as clients see them; [memorytool] holds
// them for code outside the provider.
const (
	ToolStore       = memorytool.Store
	ToolSearch      = memorytool.Search
	ToolReadChunk   = memorytool.ReadChunk
	ToolRecall      = memorytool.Recall
	ToolNote        = memorytool.Note
	ToolTag         = memorytool.Tag
	ToolBrowse      = memorytool.Browse
	ToolTopEntities = memorytool.TopEntities
	ToolListSources = memorytool.ListSources
	ToolForget      = memorytool.Forget
	ToolHistory     = memorytool.History
)
