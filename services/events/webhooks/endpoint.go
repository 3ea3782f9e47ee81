package webhooks

func webhookLocation(w Webhook) string { return "/webhooks/" + w.ID.String() }
