// Package platform holds what the host tells users differently on each
// operating system.
package platform
