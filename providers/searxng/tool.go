package searxng

import (
	"encoding/json"
	"fmt"

	"github.com/openhuman/openhuman-host/sdk"
)

// searchTool is searxng_search's catalog entry for the given settings:
// max_results defaults to the configured value, and the tool's deadline
// is timeout_secs plus a margin.
func searchTool(cfg settings) sdk.Tool {
	return sdk.Tool{
		Name:  ToolSearch,
		Title: "Web search",
		Description: "Searches the web through the operator's SearXNG instance, which asks several search engines at once, " +
			"and returns up to max_results results, best first: title, url, a plain-text snippet and the engines that found each, " +
			"with direct answers, infoboxes and suggestions when there are any. Use it for current or public information that is " +
			"not in memory; open the urls with another tool to read a page. categories narrows the search: general (or web), news, images. " +
			"unresponsive_engines lists engines that failed; an error result says what went wrong and what to do.",
		InputSchema:  mustJSON(inputSchema(cfg)),
		OutputSchema: mustJSON(outputSchema()),
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

// inputSchema is searxng_search's input schema. Categories are not an
// enum: they are matched case-insensitively, in code, so the schema only
// bounds them.
func inputSchema(cfg settings) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{
				"type":        "string",
				"minLength":   1,
				"maxLength":   maxQueryRunes,
				"description": "What to search for, as you would type it into a search engine.",
			},
			"categories": map[string]any{
				"type":     "array",
				"maxItems": maxCategories,
				"items": map[string]any{
					"type":      "string",
					"minLength": 1,
					"maxLength": maxCategoryRunes,
				},
				"description": "Categories to search, any of: " + validCategories + "; case does not matter. " +
					"Leave it out for the instance's default (general).",
			},
			"language": map[string]any{
				"type":      "string",
				"minLength": 1,
				"maxLength": maxLanguageRunes,
				"description": "Language of the results: a code such as \"en\" or \"de\", a code with a region such as \"de-CH\", " +
					"\"all\" for every language or \"auto\" to detect it from the query. Leave it out for the configured default.",
			},
			"max_results": map[string]any{
				"type":        "integer",
				"minimum":     minResults,
				"maximum":     maxResults,
				"default":     cfg.maxResults,
				"description": fmt.Sprintf("Most results to return, %d to %d; default %d.", minResults, maxResults, cfg.maxResults),
			},
		},
		"required":             []string{"query"},
		"additionalProperties": false,
	}
}

// object is a JSON Schema object with exactly the given properties.
func object(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

func arrayOf(items map[string]any, description string) map[string]any {
	return map[string]any{"type": "array", "items": items, "description": description}
}

// outputSchema describes searchOutput.
func outputSchema() map[string]any {
	strs := map[string]any{"type": "string"}
	return object([]string{"query", "results", "unresponsive_engines", "answers", "suggestions"}, map[string]any{
		"query": str("The query as searched."),
		"results": arrayOf(object([]string{"title", "url", "snippet", "source", "engines"}, map[string]any{
			"title":     str("The page's title, or its url when it has none."),
			"url":       map[string]any{"type": "string", "minLength": 1, "description": "The page's address."},
			"snippet":   str("Plain text from the page, as the engines showed it; may be empty."),
			"source":    str("The engine that found the result (the first of engines); empty when the instance did not say."),
			"engines":   arrayOf(strs, "Every engine that found the result."),
			"score":     map[string]any{"type": "number", "description": "SearXNG's ranking score; higher is better."},
			"category":  str("The result's category, such as general, news or images."),
			"published": str("When the page was published, as the instance reported it."),
			"image":     str("For image results: the image's address."),
		}), "The results, best first, at most max_results."),
		"unresponsive_engines": arrayOf(object([]string{"engine", "reason"}, map[string]any{
			"engine": str("The engine's name."),
			"reason": str("Why it failed, as SearXNG says: timeout, CAPTCHA, HTTP error, too many requests…"),
		}), "Engines that failed during this search."),
		"number_of_results": map[string]any{
			"type": "integer", "minimum": 1,
			"description": "How many results the engines estimated in all; absent when they did not say.",
		},
		"answers": arrayOf(object([]string{"answer"}, map[string]any{
			"answer": str("A direct answer, such as a calculation or a definition."),
			"url":    str("Where the answer comes from."),
			"engine": str("The engine or answerer that gave it."),
		}), "Direct answers to the query."),
		"suggestions": arrayOf(strs, "Related queries the engines suggested."),
		"infoboxes": arrayOf(object([]string{"title", "urls", "attributes"}, map[string]any{
			"title":   str("The topic."),
			"content": str("A summary of the topic."),
			"url":     str("The topic's page."),
			"engine":  str("The engine that gave the infobox."),
			"urls": arrayOf(object([]string{"title", "url"}, map[string]any{
				"title": str("The link's title."),
				"url":   str("The link."),
			}), "Links about the topic."),
			"attributes": arrayOf(object([]string{"label", "value"}, map[string]any{
				"label": str("The fact's name."),
				"value": str("The fact."),
			}), "Facts about the topic."),
		}), "Summaries of the query's topic (Wikipedia, Wikidata); absent when there are none."),
	})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("searxng: marshal schema: %v", err))
	}
	return b
}
