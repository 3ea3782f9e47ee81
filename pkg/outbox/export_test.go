package outbox

// SetAfterPublish makes the relay call hook after JetStream acknowledged a
// round and before the round is marked published.
func (r *Relay) SetAfterPublish(hook func()) { r.afterPublish = hook }
