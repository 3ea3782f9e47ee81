package webhooks

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks specification's published example: this secret,
// id, timestamp and body sign to exactly this.
func TestSignMatchesTheSpecificationsVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	got, err := Sign([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("Sign = %q, %v", got, err)
	}
	two, err := Sign([]string{secret, NewSecret()}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	parts := strings.Split(two, " ")
	if err != nil || len(parts) != 2 || parts[0] != got || !strings.HasPrefix(parts[1], "v1,") || parts[1] == got {
		t.Fatalf("during a rotation: %q, %v", two, err)
	}
	if _, err := Sign([]string{"whsec_not base64!"}, "id", time.Now(), nil); err == nil {
		t.Error("a secret that does not decode must not sign")
	}
}

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, SecretPrefix))
	if !strings.HasPrefix(a, SecretPrefix) || err != nil || len(key) < 24 || len(key) > 64 || a == b {
		t.Fatalf("secrets %q %q (%d bytes, %v)", a, b, len(key), err)
	}
}

func TestRetrySchedule(t *testing.T) {
	s := RetrySchedule{First: 5 * time.Second, Max: time.Hour, Jitter: 0.2, GiveUpAfter: 24 * time.Hour}
	queued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		attempts int
		now      time.Time
		r        float64
		delay    time.Duration // from now; 0 with giveUp
		giveUp   bool
	}{
		{"first retry, no jitter", 1, queued, 0.5, 5 * time.Second, false},
		{"first retry, jittered up, within 10 s", 1, queued, 0.75, 5500 * time.Millisecond, false},
		{"first retry, least jitter", 1, queued, 0, 4 * time.Second, false},
		{"doubles", 3, queued.Add(time.Minute), 0.5, 20 * time.Second, false},
		{"capped", 20, queued.Add(time.Hour), 0.5, time.Hour, false},
		{"last attempt at the deadline", 30, queued.Add(23*time.Hour + 30*time.Minute), 0.5, 30 * time.Minute, false},
		{"gives up at the deadline", 31, queued.Add(24 * time.Hour), 0.5, 0, true},
		{"gives up after it", 31, queued.Add(25 * time.Hour), 0.5, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, giveUp := s.Next(tt.attempts, queued, tt.now, tt.r)
			if giveUp != tt.giveUp || (!giveUp && next.Sub(tt.now) != tt.delay) {
				t.Errorf("Next = %v (in %v), giveUp %v; want in %v, giveUp %v", next, next.Sub(tt.now), giveUp, tt.delay, tt.giveUp)
			}
		})
	}
	// A schedule of at least 24 hours: attempts never stop early.
	now, attempts := queued, 1
	for {
		next, giveUp := s.Next(attempts, queued, now, 0.99)
		if giveUp {
			break
		}
		now, attempts = next, attempts+1
	}
	if now.Sub(queued) < 24*time.Hour {
		t.Errorf("gave up %v after queueing", now.Sub(queued))
	}
}
