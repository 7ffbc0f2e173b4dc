package platform

// ReloadAdvice says how to make a running server take a fixed config, to
// follow "fix the config, then". Windows has no SIGHUP: a server started
// with serve --watch reloads when the file is saved.
const ReloadAdvice = "restart the server (one started with serve --watch reloads on every save)"

// ReloadNotice tells when running servers take a config change.
const ReloadNotice = "Running servers started with serve --watch load it at once; restart the others."
