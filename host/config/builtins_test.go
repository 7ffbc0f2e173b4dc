package config

// The embedded defaults configure the built-in providers, so the tests
// read the registry the binary has.
import _ "github.com/openhuman/openhuman-host/internal/builtins"
