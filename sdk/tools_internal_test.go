package sdk

import (
	"context"
	"reflect"
	"testing"
)

type derivedOnce struct {
	Name string `json:"name" schema:"minLength=1"`
}

// A type's schema is derived and resolved once per process and shared by
// every tool that uses the type, while each tool gets its own copy of the
// JSON, so that a caller changing one tool's schema changes no other's.
func TestDeriveIsSharedPerType(t *testing.T) {
	first, err := derive(reflect.TypeFor[derivedOnce]())
	if err != nil {
		t.Fatal(err)
	}
	second, err := derive(reflect.TypeFor[derivedOnce]())
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatal("derive computed the same type's schema twice")
	}
	a, err := newTypedTool(Tool{Name: "a", Class: ClassRead}, func(_ context.Context, _ *CallToolRequest, _ derivedOnce) (*CallToolResult, any, error) {
		return nil, nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := newTypedTool(Tool{Name: "b", Class: ClassRead}, func(_ context.Context, _ *CallToolRequest, _ derivedOnce) (*CallToolResult, any, error) {
		return nil, nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(a.spec.InputSchema) != string(first.raw) {
		t.Fatalf("tool a's input schema = %s, want the derived %s", a.spec.InputSchema, first.raw)
	}
	a.spec.InputSchema[0] = 'X'
	if b.spec.InputSchema[0] != '{' || first.raw[0] != '{' {
		t.Fatal("changing one tool's input schema changed another's or the shared one")
	}
	if a.call == nil || b.call == nil {
		t.Fatal("no call function")
	}
}
