package sdk

import (
	"context"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/openhuman/openhuman-host/sdk/internal/providerv1"
)

// TestGeneratedCodeMatchesProto fails when sdk/internal/providerv1 was not
// regenerated after a change to the .proto: run "make proto".
func TestGeneratedCodeMatchesProto(t *testing.T) {
	t.Parallel()
	const file = "openhuman/provider/v1/provider.proto"
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{"proto"}}),
	}
	files, err := compiler.Compile(context.Background(), file)
	if err != nil {
		t.Fatalf("compile %s: %v", file, err)
	}
	fromSource := protodesc.ToFileDescriptorProto(files[0])
	fromSource.SourceCodeInfo = nil
	generated := protodesc.ToFileDescriptorProto(providerv1.File_openhuman_provider_v1_provider_proto)
	generated.SourceCodeInfo = nil
	if !proto.Equal(fromSource, generated) {
		t.Errorf("generated code is stale: run \"make proto\"\nfrom .proto:\n%s\ngenerated:\n%s",
			prototext.Format(fromSource), prototext.Format(generated))
	}
}
