package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// service is one generated upstream server: a product whose resources
// each get a few operations, the way real MCP servers for such products
// name and describe their tools.
type service struct {
	name, product string
	resources     []resource
}

// resource is one kind of thing a service manages.
type resource struct {
	noun, plural, about string
	// args are the identifying and content arguments of create/update.
	args []string
	ops  string // letters: l list, g get, c create, u update, d delete, s search
}

var services = []service{
	{"github", "GitHub", []resource{
		{"issue", "issues", "a bug report or feature request in a repository", []string{"repo", "title", "body", "labels"}, "lgcuds"},
		{"pull_request", "pull requests", "proposed code changes to merge into a branch", []string{"repo", "head", "base", "title"}, "lgcus"},
		{"repository", "repositories", "a Git repository with its code and settings", []string{"owner", "name", "private"}, "lgc"},
		{"workflow_run", "workflow runs", "a GitHub Actions CI run", []string{"repo", "workflow"}, "lg"},
	}},
	{"slack", "Slack", []resource{
		{"message", "messages", "a chat message posted in a channel", []string{"channel", "text", "thread_ts"}, "lcds"},
		{"channel", "channels", "a conversation channel of the workspace", []string{"name", "topic", "private"}, "lgc"},
		{"user", "users", "a member of the workspace and their profile", []string{"email"}, "lg"},
	}},
	{"jira", "Jira", []resource{
		{"ticket", "tickets", "a work item tracked in a project board", []string{"project", "summary", "description", "assignee"}, "lgcus"},
		{"sprint", "sprints", "a time-boxed iteration of an agile board", []string{"board", "name", "goal"}, "lgc"},
	}},
	{"notion", "Notion", []resource{
		{"page", "pages", "a document page in the wiki workspace", []string{"parent", "title", "content"}, "gcus"},
		{"database", "databases", "a structured table of pages with properties", []string{"parent", "title"}, "lgc"},
	}},
	{"linear", "Linear", []resource{
		{"issue", "issues", "a task in a team's product backlog", []string{"team", "title", "priority"}, "lgcus"},
		{"project", "projects", "a planned body of work with a target date", []string{"team", "name", "target_date"}, "lgc"},
	}},
	{"postgres", "PostgreSQL", []resource{
		{"query", "queries", "a read-only SQL SELECT statement run against the database", []string{"sql"}, "c"},
		{"table", "tables", "a table's columns, types and indexes in the schema", []string{"schema", "table"}, "lg"},
	}},
	{"gmail", "Gmail", []resource{
		{"email", "emails", "an email message in the mailbox", []string{"to", "subject", "body"}, "lgcds"},
		{"draft", "drafts", "an unsent email draft", []string{"to", "subject", "body"}, "lcd"},
		{"label", "labels", "a label that sorts emails into categories", []string{"name"}, "lc"},
	}},
	{"calendar", "Google Calendar", []resource{
		{"event", "events", "a meeting or appointment on the calendar with a start and end time", []string{"calendar", "summary", "start", "end", "attendees"}, "lgcuds"},
		{"free_busy", "availability", "when people are free or busy in a time range", []string{"attendees", "from", "to"}, "g"},
	}},
	{"drive", "Google Drive", []resource{
		{"file", "files", "a document, spreadsheet or other file stored in the cloud drive", []string{"folder", "name", "mime_type"}, "lgcds"},
		{"permission", "sharing permissions", "who may view or edit a file", []string{"file", "email", "role"}, "lcd"},
	}},
	{"stripe", "Stripe", []resource{
		{"customer", "customers", "a paying customer account with billing details", []string{"email", "name"}, "lgcus"},
		{"invoice", "invoices", "a bill sent to a customer for payment", []string{"customer", "amount", "currency"}, "lgc"},
		{"refund", "refunds", "money returned to a customer for a charge", []string{"charge", "amount"}, "lc"},
		{"subscription", "subscriptions", "a recurring payment plan of a customer", []string{"customer", "price"}, "lgcd"},
	}},
	{"sentry", "Sentry", []resource{
		{"error_event", "error events", "a captured application crash or exception with its stack trace", []string{"project", "event_id"}, "lgs"},
		{"alert_rule", "alert rules", "a rule that notifies the team when errors spike", []string{"project", "threshold"}, "lc"},
	}},
	{"datadog", "Datadog", []resource{
		{"metric", "metrics", "a time series of a monitored value such as CPU or latency", []string{"query", "from", "to"}, "gs"},
		{"monitor", "monitors", "an alerting monitor on a metric threshold", []string{"name", "query", "threshold"}, "lgcd"},
		{"dashboard", "dashboards", "a board of graphs of metrics", []string{"title"}, "lg"},
	}},
	{"kubernetes", "Kubernetes", []resource{
		{"pod", "pods", "a running container group in the cluster with its status and logs", []string{"namespace", "name"}, "lgd"},
		{"deployment", "deployments", "a replicated workload and its rollout", []string{"namespace", "name", "replicas"}, "lgu"},
		{"pod_log", "pod logs", "the console output of a container", []string{"namespace", "pod", "tail_lines"}, "g"},
	}},
	{"docker", "Docker", []resource{
		{"container", "containers", "a running or stopped container on the local engine", []string{"image", "name", "ports"}, "lgcd"},
		{"image", "images", "a container image stored locally", []string{"reference"}, "ld"},
	}},
	{"figma", "Figma", []resource{
		{"design_file", "design files", "a user interface design document with frames and components", []string{"file_key"}, "lg"},
		{"comment", "design comments", "feedback left on a design", []string{"file_key", "message"}, "lc"},
	}},
	{"confluence", "Confluence", []resource{
		{"space_page", "wiki pages", "an article of the team knowledge base", []string{"space", "title", "body"}, "gcus"},
	}},
	{"zendesk", "Zendesk", []resource{
		{"support_ticket", "support tickets", "a customer support request and its conversation", []string{"requester", "subject", "comment"}, "lgcus"},
	}},
	{"hubspot", "HubSpot", []resource{
		{"contact", "contacts", "a person in the sales CRM with their company and deal history", []string{"email", "first_name", "last_name"}, "lgcus"},
		{"deal", "deals", "a sales opportunity moving through the pipeline", []string{"name", "amount", "stage"}, "lgcu"},
	}},
	{"s3", "Amazon S3", []resource{
		{"object", "objects", "a stored blob in a bucket", []string{"bucket", "key"}, "lgd"},
		{"bucket", "buckets", "a storage container for objects", []string{"name", "region"}, "lc"},
	}},
	{"weather", "OpenWeather", []resource{
		{"forecast", "forecasts", "the weather forecast for the next days at a place", []string{"city", "days"}, "g"},
		{"current_weather", "current conditions", "the temperature, wind and rain now at a place", []string{"city"}, "g"},
	}},
	{"maps", "Google Maps", []resource{
		{"route", "routes", "driving, walking or transit directions between two places with travel time", []string{"origin", "destination", "mode"}, "g"},
		{"place", "places", "a business or point of interest with its address and opening hours", []string{"query", "near"}, "gs"},
	}},
	{"spotify", "Spotify", []resource{
		{"track", "tracks", "a song in the music catalog", []string{"query"}, "s"},
		{"playlist", "playlists", "a list of songs", []string{"name", "tracks"}, "lcu"},
		{"playback", "playback", "what is playing now on the user's device", []string{"track"}, "gu"},
	}},
	{"trello", "Trello", []resource{
		{"card", "cards", "a to-do card on a kanban board list", []string{"list", "name", "due"}, "lgcud"},
		{"board", "boards", "a kanban board of lists and cards", []string{"name"}, "lgc"},
	}},
	{"asana", "Asana", []resource{
		{"task", "tasks", "an assignment with an owner and a due date in a project", []string{"project", "name", "assignee", "due_on"}, "lgcuds"},
	}},
	{"dropbox", "Dropbox", []resource{
		{"shared_link", "shared links", "a public link to a stored file", []string{"path"}, "lcd"},
		{"stored_file", "stored files", "a file synced to the Dropbox account", []string{"path"}, "lgds"},
	}},
	{"shopify", "Shopify", []resource{
		{"order", "orders", "a purchase placed in the online store with its items and shipping", []string{"customer", "items"}, "lgcus"},
		{"product", "products", "an item sold in the online store with price and stock", []string{"title", "price", "inventory"}, "lgcud"},
	}},
	{"salesforce", "Salesforce", []resource{
		{"account", "accounts", "a company customer record in the CRM", []string{"name", "industry"}, "lgcus"},
		{"opportunity", "opportunities", "a potential sale with an amount and close date", []string{"account", "amount", "close_date"}, "lgcu"},
	}},
	{"pagerduty", "PagerDuty", []resource{
		{"incident", "incidents", "a production problem that pages the on-call engineer", []string{"service", "title", "urgency"}, "lgcu"},
		{"oncall", "on-call schedules", "who is on call for a service right now", []string{"schedule"}, "lg"},
	}},
	{"cloudflare", "Cloudflare", []resource{
		{"dns_record", "DNS records", "a DNS entry of a domain such as an A or CNAME record", []string{"zone", "type", "name", "content"}, "lgcud"},
		{"cache", "cache", "the edge cache of a website", []string{"zone", "urls"}, "d"},
	}},
	{"discord", "Discord", []resource{
		{"channel_message", "channel messages", "a message in a server channel", []string{"channel", "content"}, "lcd"},
		{"member", "server members", "a person who joined the server and their roles", []string{"user", "roles"}, "lgu"},
	}},
	{"youtube", "YouTube", []resource{
		{"video", "videos", "a video with its title, views and captions", []string{"query"}, "gs"},
		{"transcript", "transcripts", "the captions of a video as text", []string{"video"}, "g"},
	}},
	{"airtable", "Airtable", []resource{
		{"record", "records", "a row of a base table", []string{"base", "table", "fields"}, "lgcud"},
	}},
	{"twilio", "Twilio", []resource{
		{"sms", "text messages", "an SMS sent to or from a phone number", []string{"to", "body"}, "lc"},
		{"call", "phone calls", "a voice call placed to a phone number", []string{"to", "message"}, "lc"},
	}},
}

var verbs = map[byte]struct{ prefix, sentence string }{
	'l': {"list", "List the %[2]s of %[3]s, newest first; %[1]s is %[4]s."},
	'g': {"get", "Get one %[1]s from %[3]s by its identifier, with all its fields; a %[1]s is %[4]s."},
	'c': {"create", "Create a new %[1]s in %[3]s and return its identifier; a %[1]s is %[4]s."},
	'u': {"update", "Update the fields of an existing %[1]s in %[3]s; a %[1]s is %[4]s."},
	'd': {"delete", "Delete a %[1]s from %[3]s for good; a %[1]s is %[4]s."},
	's': {"search", "Search the %[2]s of %[3]s by keywords and filters; a %[1]s is %[4]s."},
}

// fixtureTools are the tools of one generated service.
func fixtureTools(svc service) []*mcp.Tool {
	var out []*mcp.Tool
	for _, r := range svc.resources {
		for i := 0; i < len(r.ops); i++ {
			v := verbs[r.ops[i]]
			noun := strings.ReplaceAll(r.noun, "_", " ")
			props := map[string]any{}
			var required []string
			switch r.ops[i] {
			case 'l':
				props["limit"] = map[string]any{"type": "integer", "description": "how many to return"}
			case 's':
				props["query"] = map[string]any{"type": "string", "description": "keywords to look for"}
				required = append(required, "query")
			case 'g', 'd':
				props["id"] = map[string]any{"type": "string", "description": "the " + noun + "'s identifier"}
				required = append(required, "id")
			}
			if r.ops[i] == 'c' || r.ops[i] == 'u' || r.ops[i] == 'g' && len(r.args) > 0 && r.ops == "g" {
				for _, a := range r.args {
					props[a] = map[string]any{"type": "string", "description": strings.ReplaceAll(a, "_", " ") + " of the " + noun}
				}
			}
			if r.ops[i] == 'u' {
				props["id"] = map[string]any{"type": "string", "description": "the " + noun + "'s identifier"}
				required = append(required, "id")
			}
			sort.Strings(required)
			out = append(out, &mcp.Tool{
				Name:        v.prefix + "_" + r.noun,
				Description: fmt.Sprintf(v.sentence, noun, r.plural, svc.product, r.about),
				InputSchema: map[string]any{"type": "object", "properties": props, "required": required},
			})
		}
	}
	return out
}

// serveFixture serves the named service's tools over stdio until stdin
// closes.
func serveFixture(ctx context.Context, name string) error {
	for _, svc := range services {
		if svc.name != name {
			continue
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "fixture-" + name, Version: "1"}, nil)
		for _, t := range fixtureTools(svc) {
			s.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
		}
		return s.Run(ctx, &mcp.StdioTransport{})
	}
	return fmt.Errorf("no fixture service %q", name)
}
