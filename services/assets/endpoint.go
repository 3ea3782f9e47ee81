package assets

// The route table (transport.go) names each operation's endpoint where it
// routes it; every one is made with the adapters of pkg/endpoints.

func assetLocation(a Asset) string { return "/assets/" + a.ID.String() }
