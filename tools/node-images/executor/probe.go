package main

import (
	"fmt"
	"strconv"
	"syscall"
)

// errnoNames names the errnos a kernel probe tells apart (the rest print as their number).
var errnoNames = map[syscall.Errno]string{
	syscall.ENOSYS: "ENOSYS", syscall.EPERM: "EPERM", syscall.EINVAL: "EINVAL", syscall.EFAULT: "EFAULT",
	syscall.EBADF: "EBADF", syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.EACCES: "EACCES", syscall.ESRCH: "ESRCH",
}

// probeSyscall makes one raw syscall and prints its outcome: which kernel answers shows in which
// syscalls it implements (gVisor answers ENOSYS for some the host kernel serves).
func probeSyscall(args []string) error {
	var n [7]uintptr
	for i, a := range args {
		v, err := strconv.ParseInt(a, 0, 64)
		if err != nil {
			return fmt.Errorf("syscall: %q is not an integer", a)
		}
		n[i] = uintptr(v)
	}
	r, _, errno := syscall.Syscall6(n[0], n[1], n[2], n[3], n[4], n[5], n[6])
	if errno != 0 {
		name := errnoNames[errno]
		if name == "" {
			name = strconv.Itoa(int(errno))
		}
		fmt.Printf("errno %d %s\n", int(errno), name)
		return nil
	}
	fmt.Printf("ok %d\n", r)
	return nil
}
