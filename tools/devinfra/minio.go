package devinfra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinioOptions configures StartMinio.
type MinioOptions struct {
	// DataDir holds the objects and MinIO's own metadata (.minio.sys). It is
	// reused, so data survives restarts.
	DataDir string
	// Port of the S3 API; 0 picks a free one.
	Port int
	// ConsolePort is where the web console listens; 0 leaves it off.
	ConsolePort int
	// CredentialsFile holds the root credentials: read when it exists,
	// otherwise generated and written with mode 0600. "" means
	// DataDir + ".credentials", beside the data dir rather than inside it,
	// where MinIO would take a directory for a bucket.
	CredentialsFile string
	// Region the server reports and signs for; "" means us-east-1.
	Region string
	// LogFile receives server output; "" means DataDir + ".log".
	LogFile string
}

// Minio is a running private MinIO server.
type Minio struct {
	Port       int
	Endpoint   string // host:port, as S3 clients such as minio-go take it
	URL        string // http://127.0.0.1:PORT
	ConsoleURL string // "" when the console is off
	// AccessKey and SecretKey are the root credentials, from CredentialsFile.
	AccessKey, SecretKey string
	Region               string
	DataDir              string
	CredentialsFile      string
	LogFile              string

	srv *server
}

const (
	defaultMinioRegion = "us-east-1"
	minioRootUser      = "registry-root"

	// Names of the credentials in CredentialsFile: MinIO's own, so the file
	// can be sourced to run the same server by hand.
	minioUserKey     = "MINIO_ROOT_USER"
	minioPasswordKey = "MINIO_ROOT_PASSWORD"
)

// StartMinio starts a single-drive MinIO server on 127.0.0.1 and returns once
// /minio/health/ready answers 200. It builds the pinned server first if it is
// not cached yet (see EnsureMinioServer), which takes minutes once; callers
// that cannot wait that long under ctx call EnsureMinioServer beforehand.
func StartMinio(ctx context.Context, o MinioOptions) (*Minio, error) {
	m, err := startMinio(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start minio: %w", err)
	}
	return m, nil
}

func startMinio(ctx context.Context, o MinioOptions) (*Minio, error) {
	dataDir, err := privateDataDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	// Without flags MinIO creates ~/.minio (a legacy config dir) and reads
	// TLS certificates from ~/.minio/certs. A dir of ours, left empty, keeps
	// the user's home untouched and the server on plain HTTP, which is fine
	// on loopback, whatever that home holds.
	configDir := dataDir + ".config"
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return nil, fmt.Errorf("create config dir: %w", err)
	}
	logFile := o.LogFile
	if logFile == "" {
		logFile = dataDir + ".log"
	}
	credFile := o.CredentialsFile
	if credFile == "" {
		credFile = dataDir + ".credentials"
	}
	region := o.Region
	if region == "" {
		region = defaultMinioRegion
	}
	user, password, err := minioCredentials(credFile, dataDir)
	if err != nil {
		return nil, err
	}
	bin, err := EnsureMinioServer(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	m := &Minio{
		AccessKey: user, SecretKey: password, Region: region,
		DataDir: dataDir, CredentialsFile: credFile, LogFile: logFile,
	}
	return launchOnPort(o.Port, func(port int) (*Minio, error) {
		return m.launch(ctx, bin, configDir, port, o.ConsolePort)
	})
}

func (m *Minio) launch(ctx context.Context, bin, configDir string, port, consolePort int) (*Minio, error) {
	addr := loopback(port)
	args := []string{
		"--config-dir", configDir,
		"--certs-dir", filepath.Join(configDir, "certs"),
		"--anonymous", // no credentials or other secrets in the log
		"server",
		"--address", addr,
	}
	env := []string{
		minioUserKey + "=" + m.AccessKey,
		minioPasswordKey + "=" + m.SecretKey,
		"MINIO_SITE_REGION=" + m.Region,
		// Nothing calls out: no update check (a source build has no release
		// date to compare with anyway) and no call-home. NTP, SUBNET and
		// notification targets are off unless configured, and
		// withoutMinioEnv keeps the caller's environment from doing that.
		"MINIO_UPDATE=off",
		"MINIO_CALLHOME_ENABLE=off",
		// A development server: MinIO then caps its buffer pool at 256 MiB
		// instead of sizing it to the machine's memory.
		"MINIO_CI_CD=on",
	}
	consoleURL := ""
	if consolePort != 0 {
		// The console reaches the API at 127.0.0.1 by itself.
		args = append(args, "--console-address", loopback(consolePort))
		consoleURL = "http://" + loopback(consolePort)
	} else {
		env = append(env, "MINIO_BROWSER=off")
	}
	args = append(args, m.DataDir)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(withoutMinioEnv(os.Environ()), env...)
	srv, err := startServer("minio", cmd, m.LogFile)
	if err != nil {
		return nil, err
	}
	url := "http://" + addr
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: m.Region})
	if err != nil {
		_ = srv.stop(syscall.SIGKILL)
		return nil, fmt.Errorf("minio client: %w", err)
	}
	err = waitReady(ctx, srv, func(ctx context.Context) error {
		if err := minioReady(ctx, url); err != nil {
			return err
		}
		// Any MinIO says it is ready, another test's too when it took the
		// port before ours could (ours then exits, and launchOnPort
		// tries another port): only ours knows these credentials.
		if _, err := client.ListBuckets(ctx); err != nil {
			return fmt.Errorf("%s does not take the root credentials: %w", url, err)
		}
		// The console comes up after the API; a caller given its URL
		// expects it to answer.
		if consoleURL != "" {
			return httpOK(ctx, consoleURL)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	started := *m
	started.Port, started.Endpoint, started.URL, started.ConsoleURL, started.srv = port, addr, url, consoleURL, srv
	return &started, nil
}

// withoutMinioEnv drops MinIO's settings from the caller's environment: a
// MINIO_ROOT_USER, MINIO_CONFIG, a logger webhook or an NTP server there
// would change our server or have it contact other hosts.
func withoutMinioEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "MINIO_") || strings.HasPrefix(name, "_MINIO_") || strings.HasPrefix(name, "CONSOLE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// minioReady asks the readiness endpoint, which answers 200 once the drive
// is online and the server takes requests.
func minioReady(ctx context.Context, url string) error {
	return httpOK(ctx, url+"/minio/health/ready")
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// minioCredentials reads the root credentials from path, or generates and
// writes them when the file does not exist. Data written under one password
// is only readable with it, so a data dir that already holds a MinIO
// deployment without its credentials file is an error, not a fresh start.
func minioCredentials(path, dataDir string) (user, password string, err error) {
	values, err := readCredentials(path)
	if err == nil {
		user, password = values[minioUserKey], values[minioPasswordKey]
		// MinIO's own limits: it refuses to start with shorter ones.
		if len(user) < 3 || len(password) < 8 {
			return "", "", fmt.Errorf("credentials file %s lacks %s (3+ characters) or %s (8+ characters)", path, minioUserKey, minioPasswordKey)
		}
		return user, password, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	if _, statErr := os.Stat(filepath.Join(dataDir, ".minio.sys")); statErr == nil {
		return "", "", fmt.Errorf("%s holds MinIO data but its credentials file %s is missing; restore the file, or remove the data dir to start over", dataDir, path)
	}
	if password, err = NewSecret(); err != nil {
		return "", "", err
	}
	user = minioRootUser
	content := fmt.Sprintf("# Root credentials of the MinIO server whose data is in %s.\n# Keep them with the data: they are needed to read it.\n%s=%s\n%s=%s\n",
		dataDir, minioUserKey, user, minioPasswordKey, password)
	if err := writePrivateFile(path, content); err != nil {
		return "", "", fmt.Errorf("write credentials file: %w", err)
	}
	return user, password, nil
}

// Stop shuts the server down gracefully and waits for it to exit, killing
// it if it takes too long.
func (m *Minio) Stop() error {
	return m.srv.stop(syscall.SIGTERM)
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
