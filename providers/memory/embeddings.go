package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/openhuman/openhuman-host/sdk/embeddings"
)

// embeddingsTable names the config table in error messages.
const embeddingsTable = "[providers.memory.embeddings]"

// embeddingsConfig is the [providers.memory.embeddings] table. The host
// resolves api_key_env and hands the value to newOpenAIEmbedder; providers
// never read the environment themselves.
type embeddingsConfig = embeddings.Config

// embedder turns texts into unit-length vectors.
type embedder interface {
	// Embed returns one L2-normalised vector per text, in the order of
	// texts, all of the same dimension. It sends the texts in batches of the
	// configured size, one request per batch and one batch at a time,
	// honours ctx, and returns either every vector or an error, never a
	// partial result.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model is the configured model name; stored vectors are tagged with it
	// and vectors of different models are never compared.
	Model() string
}

// newOpenAIEmbedder returns an embedder for cfg using the shared
// OpenAI-compatible client, its errors naming [providers.memory.embeddings].
// apiKey is the value of the variable named by api_key_env, resolved by the
// host; "" sends no Authorization header. httpClient may be nil for a
// default client without a global timeout (each attempt is bounded by
// timeout_secs instead).
func newOpenAIEmbedder(cfg embeddingsConfig, apiKey string, httpClient *http.Client) (embedder, error) {
	c, err := embeddings.New(cfg, embeddingsTable, apiKey, httpClient)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// encodeVector encodes v as little-endian float32 values, 4 bytes per
// dimension, for storage as a BLOB.
func encodeVector(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// decodeVector decodes a BLOB written by encodeVector.
func decodeVector(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, errors.New("vector blob is empty")
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector blob of %d bytes is not a whole number of float32 values", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
