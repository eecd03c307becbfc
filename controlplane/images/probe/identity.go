package main

import (
	"os"
	"strings"
	"syscall"
)

// identity is what `probe id` reports: the ids the process runs with, and what the kernel says confines it.
func identity() map[string]any {
	groups, _ := os.Getgroups()
	status := map[string]string{}
	if text, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(text), "\n") {
			if key, value, ok := strings.Cut(line, ":"); ok {
				status[key] = strings.TrimSpace(value)
			}
		}
	}
	// A write to / fails on a read-only root filesystem; /tmp is the pod's writable emptyDir.
	rootWritable := os.WriteFile("/probe-write-test", []byte("x"), 0o600) == nil
	tmpWritable := os.WriteFile("/tmp/probe-write-test", []byte("x"), 0o600) == nil
	return map[string]any{
		"rawSocket":    rawSocket(),
		"uid":          os.Getuid(),
		"gid":          os.Getgid(),
		"groups":       groups,
		"noNewPrivs":   status["NoNewPrivs"],
		"seccomp":      status["Seccomp"],
		"capEff":       status["CapEff"],
		"capBnd":       status["CapBnd"],
		"rootWritable": rootWritable,
		"tmpWritable":  tmpWritable,
		"memoryLimit":  strings.TrimSpace(read("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max")),
		"cpuQuota":     strings.TrimSpace(read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu.max")),
	}
}

// read returns the first of the files that exists (cgroup v1 or v2 layout), or "".
func read(paths ...string) string {
	for _, path := range paths {
		if text, err := os.ReadFile(path); err == nil {
			return string(text)
		}
	}
	return ""
}

// rawSocket says whether the process may open a raw socket (CAP_NET_RAW: forging packets, ICMP floods).
func rawSocket() string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	if err != nil {
		return err.Error()
	}
	syscall.Close(fd)
	return "opened"
}
