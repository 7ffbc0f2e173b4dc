package tomledit

// The config the tests parse is merged over the embedded defaults, which
// configure the built-in providers: the tests read the binary's registry.
import _ "github.com/openhuman/openhuman-host/internal/builtins"
