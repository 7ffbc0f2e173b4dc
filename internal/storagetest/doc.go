// Package storagetest holds the tests of the SDK's storage package
// (github.com/openhuman/openhuman-host/sdk/storage) that need a real
// PostgreSQL server: they use sdk/storage/pgtest, which the SDK module cannot
// import, so they live in the host module. The package has no code of its
// own.
package storagetest
