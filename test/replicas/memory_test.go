package replicas_test

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-host/internal/cluster"
	"github.com/openhuman/openhuman-host/providers/memory/memorytool"
	"github.com/openhuman/openhuman-host/sdk/mcpwire"
	"github.com/openhuman/openhuman-host/sdk/testwait"
)

// TestMemoryAcrossReplicas stores one memory through each of three
// replicas, each acknowledged, then searches for each through every
// replica: the memory provider keeps its data in the database the
// replicas share, so every replica finds every memory.
func TestMemoryAcrossReplicas(t *testing.T) {
	c, _ := startCluster(t, 3, nil, func(o *cluster.Options) { o.Memory = true })
	ctx := testwait.Context(t)
	direct := map[string]*cluster.Client{}
	for i, r := range c.Replicas {
		cl, err := cluster.Dial(ctx, "http://"+r.Addr+"/", 2000+i, cluster.Stateless)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		direct[r.Name] = cl
	}
	// A word no other memory holds, per replica.
	token := map[string]string{}
	for _, r := range c.Replicas {
		word := "reef" + strings.ToLower(rand.Text()[:10])
		token[r.Name] = word
		res, replica, err := direct[r.Name].CallArgs(ctx, memorytool.Store, map[string]any{
			"title": "Dive log " + word, "content": "Saw a turtle near the " + word + " wall at 18 m.",
		})
		if err != nil || res.IsError || replica != r.Name {
			t.Fatalf(memorytool.Store+" through %s = %q on %q, %v", r.Name, mcpwire.Text(res), replica, err)
		}
	}
	for _, q := range c.Replicas {
		for _, owner := range c.Replicas {
			res, _, err := direct[q.Name].CallArgs(ctx, memorytool.Search, map[string]any{"query": token[owner.Name]})
			if err != nil || res.IsError {
				t.Fatalf(memorytool.Search+" through %s = %q, %v", q.Name, mcpwire.Text(res), err)
			}
			found := strings.Contains(mcpwire.Text(res), "Dive log "+token[owner.Name])
			if !found {
				t.Errorf("memory stored through %s not found through %s\n%s", owner.Name, q.Name, mcpwire.Text(res))
			}
		}
	}
}
