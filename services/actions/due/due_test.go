package due

import "testing"

func TestWorst(t *testing.T) {
	for _, c := range []struct {
		states []string
		want   string
	}{
		{nil, ""},
		{[]string{"valid"}, "valid"},
		{[]string{"valid", "open_ended"}, "open_ended"},
		{[]string{"open_ended", "due"}, "due"},
		{[]string{"due", "never", "valid"}, "never"},
		{[]string{"never", "overdue"}, "overdue"},
		{[]string{"overdue", "failed", "valid"}, "failed"},
		{[]string{"", "valid"}, "valid"},
	} {
		if got := Worst(c.states...); got != c.want {
			t.Errorf("Worst(%v) = %q, want %q", c.states, got, c.want)
		}
	}
}
