//go:build windows

package plugins

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGroup is a provider's Windows job object, the counterpart of a
// process group: the provider and every process it starts belong to it,
// TerminateJobObject ends them all at once, and because the job is
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and its only handle is the host's,
// Windows ends them all when the host exits, however it exits.
type procGroup struct {
	mu  sync.Mutex
	job windows.Handle // 0 before started and after exited
}

// prepare sets cmd up to start suspended, so that it runs no instruction
// (and starts no process) before it is in its job, and in a console
// process group of its own, so that a Ctrl-C typed at the host's console
// reaches the host alone, which stops its providers itself. HideWindow
// keeps a console the provider may get (when the host has none) hidden.
func (g *procGroup) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP,
		HideWindow:    true,
	}
}

// started puts the suspended process in a new job, then lets it run. On
// failure the process is killed.
func (g *procGroup) started(cmd *exec.Cmd) error {
	pid := uint32(cmd.Process.Pid)
	job, err := newJob()
	if err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	if err := assignToJob(job, pid); err != nil {
		_ = windows.CloseHandle(job)
		_ = cmd.Process.Kill()
		return err
	}
	g.mu.Lock()
	g.job = job
	g.mu.Unlock()
	if err := resumeProcess(pid); err != nil {
		g.kill(int(pid))
		return err
	}
	return nil
}

// kill terminates every process in the job.
func (g *procGroup) kill(int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
}

// exited closes the job once the provider has exited: what it left
// running dies with the handle (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE).
func (g *procGroup) exited() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
		g.job = 0
	}
}

// newJob creates an unnamed job object whose processes are all killed
// when its last handle closes, and which ends a process that crashes
// instead of leaving it in a Windows Error Reporting dialog.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create a job object for the provider: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return 0, fmt.Errorf("set the provider's job object to kill its processes when closed: %w", err)
	}
	return job, nil
}

// assignToJob puts process pid in job.
func assignToJob(job windows.Handle, pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("open provider process %d to put it in its job object: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return fmt.Errorf("put provider process %d in its job object: %w", pid, err)
	}
	return nil
}

// resumeProcess resumes the threads of process pid, which was created
// suspended: its main thread, the only one it has.
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("list threads to resume provider process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		t, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return fmt.Errorf("open thread %d of provider process %d: %w", entry.ThreadID, pid, err)
		}
		_, err = windows.ResumeThread(t)
		_ = windows.CloseHandle(t)
		if err != nil {
			return fmt.Errorf("resume thread %d of provider process %d: %w", entry.ThreadID, pid, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("list threads to resume provider process %d: %w", pid, err)
	}
	if resumed == 0 {
		return fmt.Errorf("resume provider process %d: it has no thread", pid)
	}
	return nil
}
