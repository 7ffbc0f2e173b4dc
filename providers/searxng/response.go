package searxng

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/openhuman/openhuman-host/sdk"
)

// The types below decode SearXNG's JSON answer (format=json). They take
// what SearXNG and searx have sent across versions and engines: a field of
// an unexpected type decodes as absent instead of failing the whole
// answer, and an element of a list that is not what it should be is
// skipped.

// rawResponse is the top level of an answer.
type rawResponse struct {
	Query               looseString                   `json:"query"`
	NumberOfResults     looseNumber                   `json:"number_of_results"`
	Results             looseList[rawResult]          `json:"results"`
	Answers             looseList[rawAnswer]          `json:"answers"`
	Infoboxes           looseList[rawInfobox]         `json:"infoboxes"`
	Suggestions         looseStrings                  `json:"suggestions"`
	UnresponsiveEngines looseList[rawUnresponsiveEng] `json:"unresponsive_engines"`
}

// rawResult is one row of results.
type rawResult struct {
	URL           looseString  `json:"url"`
	Title         looseString  `json:"title"`
	Content       looseString  `json:"content"`
	Engine        looseString  `json:"engine"`
	Engines       looseStrings `json:"engines"`
	Score         looseNumber  `json:"score"`
	Category      looseString  `json:"category"`
	PublishedDate looseString  `json:"publishedDate"`
	PubDate       looseString  `json:"pubdate"`
	ImgSrc        looseString  `json:"img_src"`
}

// rawAnswer is one answer: a string (searx, older SearXNG) or an object
// with the text in answer (SearXNG's Answer result type).
type rawAnswer struct {
	Text   string
	URL    string
	Engine string
}

// UnmarshalJSON takes a string or an object.
func (a *rawAnswer) UnmarshalJSON(b []byte) error {
	switch sdk.JSONKind(b) {
	case "a string":
		var s looseString
		_ = s.UnmarshalJSON(b)
		a.Text = string(s)
		return nil
	case "a table":
		var obj struct {
			Answer  looseString `json:"answer"`
			Text    looseString `json:"text"`
			Content looseString `json:"content"`
			URL     looseString `json:"url"`
			Engine  looseString `json:"engine"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		a.Text = firstNonEmpty(string(obj.Answer), string(obj.Text), string(obj.Content))
		a.URL, a.Engine = string(obj.URL), string(obj.Engine)
		return nil
	}
	return errSkip
}

// rawInfobox is one infobox (Wikipedia's or Wikidata's summary of a
// topic).
type rawInfobox struct {
	Infobox    looseString               `json:"infobox"`
	ID         looseString               `json:"id"`
	Content    looseString               `json:"content"`
	Engine     looseString               `json:"engine"`
	URLs       looseList[rawInfoboxURL]  `json:"urls"`
	Attributes looseList[rawInfoboxAttr] `json:"attributes"`
}

// rawInfoboxURL is one link of an infobox.
type rawInfoboxURL struct {
	Title looseString `json:"title"`
	URL   looseString `json:"url"`
}

// rawInfoboxAttr is one attribute of an infobox; value is sometimes not a
// string (images), and then it is dropped.
type rawInfoboxAttr struct {
	Label looseString `json:"label"`
	Value looseString `json:"value"`
}

// rawUnresponsiveEng is one engine that failed: SearXNG and searx send
// [name, reason] pairs; an object with engine and reason, or a bare name,
// are taken too.
type rawUnresponsiveEng struct {
	Engine string
	Reason string
}

// UnmarshalJSON takes [name, reason], {engine|name, reason|error} or
// "name".
func (u *rawUnresponsiveEng) UnmarshalJSON(b []byte) error {
	switch sdk.JSONKind(b) {
	case "an array":
		var pair []looseString
		if err := json.Unmarshal(b, &pair); err != nil {
			return err
		}
		if len(pair) > 0 {
			u.Engine = string(pair[0])
		}
		if len(pair) > 1 {
			u.Reason = string(pair[1])
		}
	case "a table":
		var obj struct {
			Engine looseString `json:"engine"`
			Name   looseString `json:"name"`
			Reason looseString `json:"reason"`
			Error  looseString `json:"error"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		u.Engine = firstNonEmpty(string(obj.Engine), string(obj.Name))
		u.Reason = firstNonEmpty(string(obj.Reason), string(obj.Error))
	case "a string":
		var s looseString
		_ = s.UnmarshalJSON(b)
		u.Engine = string(s)
	default:
		return errSkip
	}
	return nil
}

// errSkip marks a list element that looseList leaves out.
var errSkip = errors.New("skip")

// looseString is a JSON string; a number keeps its text, and anything
// else (null, booleans, arrays, objects) decodes as "".
type looseString string

// UnmarshalJSON never fails.
func (s *looseString) UnmarshalJSON(b []byte) error {
	*s = ""
	switch sdk.JSONKind(b) {
	case "a string":
		var v string
		if json.Unmarshal(b, &v) == nil {
			*s = looseString(v)
		}
	case "a number":
		*s = looseString(bytes.TrimSpace(b))
	}
	return nil
}

// looseStrings is an array of strings; elements that are not strings or
// numbers, and empty ones, are dropped, and a single string is a list of
// one.
type looseStrings []string

// UnmarshalJSON never fails.
func (l *looseStrings) UnmarshalJSON(b []byte) error {
	*l = nil
	switch sdk.JSONKind(b) {
	case "an array":
		var items []looseString
		if json.Unmarshal(b, &items) != nil {
			return nil
		}
		for _, it := range items {
			if v := strings.TrimSpace(string(it)); v != "" {
				*l = append(*l, v)
			}
		}
	case "a string", "a number":
		var s looseString
		_ = s.UnmarshalJSON(b)
		if v := strings.TrimSpace(string(s)); v != "" {
			*l = looseStrings{v}
		}
	}
	return nil
}

// looseNumber is a JSON number, or a string holding one; anything else is
// absent.
type looseNumber struct {
	Value float64
	Valid bool
}

// UnmarshalJSON never fails.
func (n *looseNumber) UnmarshalJSON(b []byte) error {
	*n = looseNumber{}
	text := string(bytes.TrimSpace(b))
	if sdk.JSONKind(b) == "a string" {
		var s string
		if json.Unmarshal(b, &s) != nil {
			return nil
		}
		text = strings.TrimSpace(s)
	} else if sdk.JSONKind(b) != "a number" {
		return nil
	}
	if f, err := strconv.ParseFloat(text, 64); err == nil {
		*n = looseNumber{Value: f, Valid: true}
	}
	return nil
}

// looseList is a JSON array of T whose elements that do not decode are
// skipped; null or a value that is not an array is an empty list.
type looseList[T any] []T

// UnmarshalJSON never fails.
func (l *looseList[T]) UnmarshalJSON(b []byte) error {
	*l = nil
	if sdk.JSONKind(b) != "an array" {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(b, &items) != nil {
		return nil
	}
	for _, it := range items {
		var v T
		if json.Unmarshal(it, &v) == nil {
			*l = append(*l, v)
		}
	}
	return nil
}

// errNotSearXNG describes an answer that is JSON but not SearXNG's.
var errNotSearXNG = errors.New(`the JSON has no "results" array`)

// decodeResponse decodes an answer. The error says, for a message, what
// came instead of SearXNG's JSON: an HTML page, invalid JSON, or JSON of
// another shape.
func decodeResponse(body []byte, contentType string) (*rawResponse, error) {
	trimmed := bytes.TrimSpace(body)
	mediaType, _, _ := mime.ParseMediaType(contentType)
	switch {
	case len(trimmed) == 0:
		return nil, errors.New("the answer was empty")
	case trimmed[0] == '<':
		return nil, fmt.Errorf("got an HTML page (%s)", orUnknown(mediaType))
	case trimmed[0] != '{':
		return nil, fmt.Errorf("got %s, not a JSON object", orUnknown(mediaType))
	}
	if !json.Valid(trimmed) {
		var probe any
		err := json.Unmarshal(trimmed, &probe)
		return nil, fmt.Errorf("the JSON is malformed (%v)", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return nil, fmt.Errorf("the JSON is malformed (%v)", err)
	}
	if results, ok := top["results"]; !ok || (sdk.JSONKind(results) != "an array" && sdk.JSONKind(results) != "null") {
		return nil, errNotSearXNG
	}
	var raw rawResponse
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("the JSON is malformed (%v)", err)
	}
	return &raw, nil
}

func orUnknown(mediaType string) string {
	if mediaType == "" {
		return "no content type"
	}
	return mediaType
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
