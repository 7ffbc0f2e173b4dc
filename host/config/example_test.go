package config_test

import (
	"fmt"

	"github.com/openhuman/openhuman-host/host/config"
)

func ExampleParse() {
	_, err := config.Parse([]byte(`[server]
port = 0

[autonomy]
level = "bogus"
`), "config.toml")
	fmt.Println(err)
	// Output:
	// config.toml:2: server.port: must be between 1 and 65535; got 0
	// config.toml:5: autonomy.level: must be one of readonly, supervised, full; got "bogus"
}

func ExampleProviderConfig_ResolveSecrets() {
	p := config.ProviderConfig{
		Name:    "agent",
		Enabled: true,
		Settings: map[string]any{
			"llm": map[string]any{"model": "gpt-4.1", "api_key_env": "OPENAI_API_KEY"},
		},
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-example"}
	secrets := p.ResolveSecrets(func(name string) string { return env[name] })
	fmt.Println(secrets)
	// Output:
	// map[llm.api_key:sk-example]
}
