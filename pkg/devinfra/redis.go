package devinfra

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RedisOptions configures StartRedis.
type RedisOptions struct {
	// DataDir is the server's working dir, where persistent data lives.
	DataDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Persistent keeps data across restarts (AOF plus RDB snapshots in
	// DataDir); otherwise nothing is written to disk.
	Persistent bool
	// LogFile receives server output; "" means DataDir + ".log".
	LogFile string
}

// Redis is a running private Redis server.
type Redis struct {
	Port    int
	Addr    string // host:port, for clients that take an address
	URL     string // redis://127.0.0.1:PORT/0
	LogFile string

	srv *server
}

// StartRedis starts a Redis server on 127.0.0.1 and returns once it answers PING.
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	r, err := startRedis(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	return r, nil
}

func startRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	if o.DataDir == "" {
		return nil, errors.New("DataDir is required")
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolve data dir: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	logFile := o.LogFile
	if logFile == "" {
		logFile = dataDir + ".log"
	}
	bin, err := RedisServerPath()
	if err != nil {
		return nil, err
	}
	return launchOnPort(o.Port, func(port int) (*Redis, error) {
		return launchRedis(ctx, bin, dataDir, logFile, port, o.Persistent)
	})
}

func launchRedis(ctx context.Context, bin, dataDir, logFile string, port int, persistent bool) (*Redis, error) {
	args := []string{
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--protected-mode", "yes",
		"--dir", dataDir,
		"--daemonize", "no",
		"--logfile", "", // stdout, which startServer sends to logFile
	}
	if persistent {
		args = append(args, "--appendonly", "yes")
	} else {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	srv, err := startServer("redis-server", exec.Command(bin, args...), logFile)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitReady(ctx, srv, func(ctx context.Context) error { return pingRedis(ctx, addr) }); err != nil {
		return nil, err
	}
	return &Redis{
		Port:    port,
		Addr:    addr,
		URL:     fmt.Sprintf("redis://%s/0", addr),
		LogFile: logFile,
		srv:     srv,
	}, nil
}

// pingRedis speaks just enough RESP to tell a ready server from one that is
// still loading its dataset (which answers -LOADING).
func pingRedis(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if reply = strings.TrimSpace(reply); reply != "+PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

// Stop shuts the server down (saving data first when Persistent) and waits
// for it to exit, killing it if it takes too long.
func (r *Redis) Stop() error {
	return r.srv.stop(syscall.SIGTERM)
}
