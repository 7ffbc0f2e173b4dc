// Package searxng is the SearXNG provider: web search through an instance
// of SearXNG (or of its predecessor searx, which answers the same JSON API)
// that the operator runs or trusts. It serves one tool, searxng_search.
//
// A call becomes one request,
//
//	GET <base_url>/search?q=<query>&format=json[&categories=a,b][&language=xx]
//
// sent with the provider's own HTTP client: a per-request deadline
// (timeout_secs), at most three redirects that keep the scheme, an 8 MiB
// cap on the answer, no proxy, and the User-Agent
// openhuman-host-searxng/<version>. The answer is decoded into types that
// accept the variations between SearXNG versions and engines (engine or
// engines, publishedDate as a string or null, answers as strings or
// objects, unresponsive_engines as [engine, reason] pairs), then
// normalised: rows without a url are dropped, the title falls back to the
// url, the snippet is the row's content as plain text cut to about 500
// characters, and the source is the engine that found the row.
//
// Every failure the model or the operator can act on is an isError result
// that says what to do: HTTP 403 (the instance has the JSON format
// disabled: add json to search.formats in its settings.yml), HTTP 429 (the
// instance's limiter), no answer within timeout_secs, a connection refused
// (is SearXNG running at base_url?), an answer that is not SearXNG's JSON
// (is base_url the instance's root?), and a search in which every engine
// failed, which is reported with each engine's reason rather than as "no
// results". Endpoints in messages are reduced to scheme://host[:port].
//
// # Settings
//
// The [providers.searxng] table of the host's config, minus the keys the
// host reads itself (enabled, command, args, sha256, start_timeout_secs,
// tool_timeout_secs), arrives as the ConfigureRequest's Config:
//
//   - base_url (required): the http or https URL of the instance's root,
//     such as http://127.0.0.1:8888 or https://example.org/searxng; no
//     user:password@, query or fragment.
//   - max_results: results returned when a call does not say, 1..50,
//     default 10.
//   - default_language: the language sent when a call does not say: "all",
//     "auto" or a code such as "en" or "de-CH"; unset sends none, so the
//     instance's own default applies.
//   - timeout_secs: how long one search may take, 1..120, default 10.
//
// Unknown keys are refused with the list of valid ones.
//
// # Environment overrides
//
// The provider reads no environment variables: the host starts providers
// with an allow-list of variables that holds none of these, so the
// settings it receives are its only input. Overrides are the host's to
// apply to the [providers.searxng] table before it configures the
// provider; the variables, each replacing the setting named after the
// arrow, are:
//
//	OPENHUMAN_SEARXNG_URL              → base_url
//	OPENHUMAN_SEARXNG_MAX_RESULTS      → max_results (a decimal integer)
//	OPENHUMAN_SEARXNG_DEFAULT_LANGUAGE → default_language
//	OPENHUMAN_SEARXNG_TIMEOUT_SECS     → timeout_secs (a decimal integer)
//
// The values are checked here like the file's, so an override that is out
// of range fails Configure with the key's name.
package searxng
