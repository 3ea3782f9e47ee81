package actiontypes

// typeLocation is where the type is listed: a type has no path of its
// own, its name is its identity.
func typeLocation(ActionType) string { return "/action_types" }
