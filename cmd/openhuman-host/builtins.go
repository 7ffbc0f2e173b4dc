package main

// The built-in providers this binary serves as `openhuman-host provider
// <name>` register themselves with the host's registry.
import _ "github.com/openhuman/openhuman-host/internal/builtins"
