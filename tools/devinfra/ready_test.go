package devinfra

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// FreePort never hands out a port twice in one process: a stack picks
// all its ports before it starts a server on any of them.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 2000 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
}

// freePortsHelperEnv makes the test binary print that many FreePort ports
// on one line and exit: another process picking ports beside this one.
const freePortsHelperEnv = "DEVINFRA_TEST_FREE_PORTS"

func printFreePorts(count string) {
	n, err := strconv.Atoi(count)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	for range n {
		port, err := FreePort()
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Print(port, " ")
	}
	fmt.Println()
	os.Exit(0)
}

// TestFreePortReservedAcrossProcesses: a port this process got from
// FreePort, not bound yet (a stack's registry processes start seconds
// after their ports are picked), is never handed out by FreePort in
// another process, which make test runs beside it. A thousand picks each
// among FreePort's 12,000 ports would share about eighty without the
// reservation.
func TestFreePortReservedAcrossProcesses(t *testing.T) {
	const picks = 1000
	held := map[int]bool{}
	for range picks {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		held[port] = true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), freePortsHelperEnv+"="+strconv.Itoa(picks))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != picks {
		t.Fatalf("helper printed %q, want %d ports", out, picks)
	}
	var shared []string
	for _, f := range fields {
		port, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper printed %q", out)
		}
		if held[port] {
			shared = append(shared, f)
		}
	}
	if len(shared) > 0 {
		t.Fatalf("another process got %d of this one's ports, among them %s", len(shared), strings.Join(shared[:min(len(shared), 5)], " "))
	}
}
