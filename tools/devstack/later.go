package devstack

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/devinfra"
)

// Joined is one part of the stack that joined after Start returned
// (Options.FirstCallFirst, Options.ObjectStoreLater): a service by its
// name, or the private "nats" or "minio" server; Err says why it did not.
type Joined struct {
	Name string
	Err  error
}

// Names of the private servers in Joined.
const (
	JoinedNATS  = "nats"
	JoinedMinio = "minio"
)

// step is work of the later start that others wait for.
type step struct {
	done chan struct{}
	err  error
}

func (s *Stack) goStep(run func() error) *step {
	st := &step{done: make(chan struct{})}
	s.background.Go(func() {
		defer close(st.done)
		st.err = run()
	})
	return st
}

func (st *step) wait() error {
	<-st.done
	return st.err
}

// reserveNATS fixes the address and user of the private NATS server that
// starts later, so the services started first are given them now.
func (s *Stack) reserveNATS(o Options, ports Ports) error {
	port := ports[NatsPort]
	if port == 0 {
		var err error
		if port, err = devinfra.FreePort(); err != nil {
			return err
		}
		ports[NatsPort] = port
	}
	file := natsCredentialsFile(o)
	user, password, err := devinfra.NatsCredentials(file)
	if err != nil {
		return err
	}
	s.NATS = NATS{URL: "nats://" + loopback(port), User: user, Password: password}
	s.NATSCredentials = file
	return nil
}

func natsCredentialsFile(o Options) string { return filepath.Join(o.Dir, "nats.credentials") }

// startLater starts in the background what plan says joins later: the
// later services' binaries (Options.BuildLater), the private NATS server
// and object store, and each later service once its binary and the
// servers it needs are there. Every part is announced on Joining as it
// joins; Stop cancels what is still on its way and waits for it.
func (s *Stack) startLater(o Options, ports Ports, plan joinPlan, env func(catalog.Service) []string) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancelLate = cancel
	joined := make(chan Joined, len(plan.services)+2)
	s.Joining, s.StillJoining = joined, plan.names()
	if plan.nats {
		s.StillJoining = append(s.StillJoining, JoinedNATS)
	}
	if plan.objectStore {
		s.StillJoining = append(s.StillJoining, JoinedMinio)
	}
	binaries := s.goStep(func() error {
		if o.BuildLater == nil || len(plan.services) == 0 {
			return nil
		}
		return o.BuildLater(ctx, plan.names())
	})
	nats := s.goStep(func() error {
		if !plan.nats {
			return nil
		}
		n, err := devinfra.StartNats(ctx, devinfra.NatsOptions{
			DataDir: filepath.Join(o.Dir, "nats"), Port: ports[NatsPort], CredentialsFile: natsCredentialsFile(o),
			LogFile: filepath.Join(s.LogDir, "nats.log"),
		})
		if err == nil {
			s.addStop(n.Stop)
			s.mu.Lock()
			s.Nats = n
			s.mu.Unlock()
		}
		joined <- Joined{Name: JoinedNATS, Err: err}
		return err
	})
	// MinIO's first build is the longest by far and only the services
	// that keep files wait for it: it takes what the cores have left
	// (devinfra.LowPriority).
	minio := s.goStep(func() error {
		if !plan.objectStore {
			return nil
		}
		m, err := s.startObjectStore(devinfra.LowPriority(ctx), o, ports)
		if err == nil {
			s.addStop(m.Stop)
		}
		joined <- Joined{Name: JoinedMinio, Err: err}
		return err
	})
	services := make([]*step, len(plan.services))
	for i, svc := range plan.services {
		services[i] = s.goStep(func() error {
			err := binaries.wait()
			if err == nil && svc.NeedsStore(catalog.NATS) {
				err = nats.wait()
			}
			if err == nil && svc.NeedsStore(catalog.ObjectStore) {
				err = minio.wait()
			}
			if err == nil {
				err = s.startProcess(ctx, o, svc.Name, ports, "serve", env(svc)...)
			}
			joined <- Joined{Name: svc.Name, Err: err}
			return err
		})
	}
	if plan.objectStore {
		ready := make(chan error, 1)
		s.ObjectStoreReady = ready
		s.background.Go(func() {
			errs := []error{minio.wait()}
			for i, svc := range plan.services {
				if svc.NeedsStore(catalog.ObjectStore) {
					errs = append(errs, services[i].wait())
				}
			}
			ready <- errors.Join(errs...)
		})
	}
	s.background.Go(func() {
		for _, st := range append(services, binaries, nats, minio) {
			_ = st.wait()
		}
		close(joined)
	})
}
