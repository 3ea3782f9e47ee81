package devinfra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func startTestNats(t *testing.T, o NatsOptions) *Nats {
	t.Helper()
	if _, err := EnsureNatsServer(context.Background(), os.Stderr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := StartNats(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	return n
}

func TestNatsNeedsThePasswordAndSurvivesACrash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "nats")
	n := startTestNats(t, NatsOptions{DataDir: dataDir})

	if !strings.HasPrefix(n.URL, "nats://127.0.0.1:") {
		t.Errorf("URL %s, want nats://127.0.0.1:PORT", n.URL)
	}
	for _, f := range []string{n.CredentialsFile, n.ConfigFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	conf, err := os.ReadFile(n.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(conf), n.Password) {
		t.Error("the config file holds the password itself, want only its hash")
	}
	if err := pingNats(ctx, n.Addr, n.User, n.Password); err != nil {
		t.Fatalf("the right password: %v", err)
	}
	err = pingNats(ctx, n.Addr, n.User, "wrong")
	var permanent permanentError
	if !errors.As(err, &permanent) {
		t.Fatalf("a wrong password: %v, want a refusal that stops waiting", err)
	}

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := pingNats(ctx, n.Addr, n.User, n.Password); err == nil {
		t.Fatal("a killed server still answers")
	}
	password := n.Password
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Password != password {
		t.Error("a restart changed the password")
	}
	if err := pingNats(ctx, n.Addr, n.User, n.Password); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
}
