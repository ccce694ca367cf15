read_only = ["registry.opentofu.org/terraform-aws-modules/*", "git::https://example.com/*"]
copy      = ["*mod.git*"]
default   = "link"
