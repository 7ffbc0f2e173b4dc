package plugins

import "slices"

// windowsEnv is what [DefaultEnv] adds on Windows: the system directory
// (without SystemRoot, Winsock and so the network fail to load), the
// temporary, profile and application-data directories, how commands are
// found and run (PATHEXT, ComSpec), and the processor facts some runtimes
// read. Windows compares variable names without regard to case.
var windowsEnv = []string{
	"SystemRoot", "SystemDrive", "windir", "TEMP", "TMP", "USERPROFILE", "HOMEDRIVE", "HOMEPATH",
	"APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles", "ProgramFiles(x86)", "CommonProgramFiles",
	"PATHEXT", "ComSpec", "USERNAME", "USERDOMAIN", "COMPUTERNAME",
	"NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "OS",
}

func defaultEnv() []string { return slices.Concat(baseEnv, windowsEnv) }
