package searxng

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/openhuman/openhuman-host/sdk"
)

// searchArgs are searxng_search's arguments; sdk.AddTool derives the input
// schema from them and checks each call against it. Categories are not an
// enum: check matches them case-insensitively, so the schema only bounds
// them. max_results gets its default, the configured one, in searchTool.
type searchArgs struct {
	Query      string   `json:"query" jsonschema:"What to search for, as you would type it into a search engine." schema:"minLength=1,maxLength=500"`
	Categories []string `json:"categories,omitempty" jsonschema:"Categories to search, any of: web (the same as general), general, news, images; case does not matter. Leave it out for the instance's default (general)." schema:"maxItems=4,items.minLength=1,items.maxLength=32"`
	Language   string   `json:"language,omitempty" jsonschema:"Language of the results: a code such as \"en\" or \"de\", a code with a region such as \"de-CH\", \"all\" for every language or \"auto\" to detect it from the query. Leave it out for the configured default." schema:"minLength=1,maxLength=16"`
	MaxResults int      `json:"max_results,omitzero" schema:"minimum=1,maximum=50"`
}

// searchTool is searxng_search's catalog entry for the given settings:
// max_results defaults to the configured value, and the tool's deadline
// is timeout_secs plus a margin. The output schema is derived from
// searchOutput.
func searchTool(cfg settings) sdk.Tool {
	in := sdk.InputSchemaFor[searchArgs]()
	limit := in.Properties["max_results"]
	limit.Default = json.RawMessage(strconv.Itoa(cfg.maxResults))
	limit.Description = fmt.Sprintf("Most results to return, %d to %d; default %d.", minResults, maxResults, cfg.maxResults)
	schema, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("searxng: marshal the input schema: %v", err))
	}
	return sdk.Tool{
		Name:  ToolSearch,
		Title: "Web search",
		Description: "Searches the web through the operator's SearXNG instance, which asks several search engines at once, " +
			"and returns up to max_results results, best first: title, url, a plain-text snippet and the engines that found each, " +
			"with direct answers, infoboxes and suggestions when there are any. Use it for current or public information that is " +
			"not in memory; open the urls with another tool to read a page. categories narrows the search: general (or web), news, images. " +
			"unresponsive_engines lists engines that failed; an error result says what went wrong and what to do.",
		InputSchema: schema,
		Annotations: sdk.Annotations{
			Title:        "Web search",
			ReadOnlyHint: sdk.Bool(true),
			// The tool reaches the web through the instance.
			OpenWorldHint: sdk.Bool(true),
		},
		Class:   sdk.ClassRead,
		Timeout: cfg.timeout() + toolTimeoutMargin,
	}
}

// search runs searxng_search with one configuration's settings and
// client.
type search struct {
	cfg settings
	c   *client
	log hclog.Logger
}

// run is searxng_search's handler. Arguments the schema cannot check and
// every failure of the instance are errors, which sdk.AddTool turns into
// isError results; the call's context ending is returned as it is.
func (s search) run(ctx context.Context, _ *sdk.CallToolRequest, args searchArgs) (*sdk.CallToolResult, searchOutput, error) {
	if err := args.check(s.cfg); err != nil {
		return nil, searchOutput{}, fmt.Errorf("%s: %w", ToolSearch, err)
	}
	start := time.Now()
	raw, status, err := s.c.search(ctx, args)
	elapsed := time.Since(start).Round(time.Millisecond)
	var ierr *instanceError
	if errors.As(err, &ierr) {
		s.log.Warn("search failed", "endpoint", s.c.endpoint(), "status", status, "duration", elapsed.String(), "error", ierr.msg)
		return nil, searchOutput{}, fmt.Errorf("%s: %s", ToolSearch, ierr.msg)
	}
	if err != nil {
		return nil, searchOutput{}, err
	}
	out := normalise(raw, args.Query, args.MaxResults)
	s.log.Debug("search", "endpoint", s.c.endpoint(), "status", status, "duration", elapsed.String(),
		"results", len(out.Results), "unresponsive_engines", len(out.UnresponsiveEngines))
	if allEnginesFailed(out) {
		return nil, searchOutput{}, fmt.Errorf("%s: every engine failed: %s. SearXNG at %s got no results from any of its engines: "+
			"check that the instance can reach the internet and that these engines work (its logs, or its preferences page), then try again",
			ToolSearch, enginesList(out.UnresponsiveEngines), s.c.endpoint())
	}
	return sdk.TextResult(renderText(out)), out, nil
}
