// Package storagetest holds the tests of the SDK's storage package
// (github.com/openhuman/openhuman-host/sdk/storage) that need a real
// PostgreSQL server, which they get from sdk/storage/pgtest. The package
// has no code of its own.
package storagetest
