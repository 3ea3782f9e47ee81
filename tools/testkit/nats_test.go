package testkit

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestNATSGivesEachTestItsOwnStream(t *testing.T) {
	a, b := NATS(t), NATS(t)
	if a.Stream == b.Stream || a.SubjectPrefix == b.SubjectPrefix {
		t.Fatalf("two calls gave the same stream %s or prefix %s", a.Stream, a.SubjectPrefix)
	}
	js, err := jetstream.New(a.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: a.Stream, Subjects: []string{a.SubjectPrefix + ".>"}}); err != nil {
		t.Fatalf("create the test's stream: %v", err)
	}
	if _, err := js.Publish(t.Context(), a.SubjectPrefix+".organization.1", []byte("{}")); err != nil {
		t.Fatalf("publish to the test's stream: %v", err)
	}
	if err := deleteStream(t.Context(), a.NATSServer, a.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(t.Context(), a.Stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("after the cleanup the stream is %v, want gone", err)
	}
	if err := deleteStream(t.Context(), b.NATSServer, b.Stream); err != nil {
		t.Fatalf("a stream nobody created: %v, want no error", err)
	}
}
