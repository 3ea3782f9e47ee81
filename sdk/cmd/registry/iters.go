package main

import (
	"iter"

	registry "github.com/assetregistry/registry/sdk"
)

type (
	iterOrg       = iter.Seq2[registry.Organization, error]
	iterPerson    = iter.Seq2[registry.Person, error]
	iterAssetType = iter.Seq2[registry.AssetType, error]
	iterAsset     = iter.Seq2[registry.Asset, error]
	iterAction    = iter.Seq2[registry.Action, error]
	iterPlan      = iter.Seq2[registry.InspectionPlan, error]
	iterWebhook   = iter.Seq2[registry.Webhook, error]
)
