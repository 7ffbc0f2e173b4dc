package mcpwire

import (
	"errors"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What the go-sdk decodes, Decode decodes to the same message.
func TestDecodeMatchesTheSDK(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":null}]}}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":null}`,
		`{"jsonrpc":"2.0","id":-7,"method":""}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"r","error":{"code":-32601,"message":"no","data":{"why":1}}}`,
		`{"jsonrpc":"2.0","id":4,"result":{},"error":null}`,
		`  {"jsonrpc":"2.0","id":5,"method":"ping","extra":true}` + "\r\n",
	} {
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("the go-sdk refuses %s: %v", line, err)
		}
		got, _, err := Decode([]byte(line))
		if err != nil {
			t.Errorf("Decode(%s): %v", line, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s) = %#v, want the go-sdk's %#v", line, got, want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		line string
		code int
		id   string
	}{
		{``, CodeParseError, ""},
		{`{not json`, CodeParseError, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}`, CodeParseError, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest, ""},
		{`42`, CodeInvalidRequest, ""},
		{`{"id":7,"foo":1}`, CodeInvalidRequest, "7"},
		{`{"jsonrpc":"1.0","id":"a","method":"ping"}`, CodeInvalidRequest, `"a"`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, CodeInvalidRequest, "null"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, CodeInvalidRequest, "true"},
		{`{"jsonrpc":"2.0","id":2,"method":7}`, CodeInvalidRequest, "2"},
		{`{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, ""},
		{`{"jsonrpc":"2.0","id":2,"error":"bad"}`, CodeInvalidRequest, "2"},
		{`{"JSONRPC":"2.0","id":2,"method":"ping"}`, CodeInvalidRequest, "2"},
	} {
		_, id, err := Decode([]byte(tc.line))
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("Decode(%s) error = %v, want code %d", tc.line, err, tc.code)
			continue
		}
		if string(id) != tc.id {
			t.Errorf("Decode(%s) id = %s, want %s", tc.line, id, tc.id)
		}
	}
}
