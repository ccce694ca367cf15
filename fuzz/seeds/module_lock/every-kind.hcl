# This file is maintained automatically by "tstore init".
# Manual edits may be lost in future updates.

module "network.vpc" {
  source      = "registry.terraform.io/terraform-aws-modules/vpc/aws"
  version     = "5.5.3"
  constraints = "~> 5.5"
  hashes = [
    "h1:35PY4wC9sFJwKSdoMKp6Z739HYyCQpXb8mLZzT2du5I=",
    "zh:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
  ]
}

module "git" {
  source  = "git::https://example.com/acme/net.git?ref=v1.2.0"
  version = "v1.2.0"
  commit  = "0123456789abcdef0123456789abcdef01234567"
  hashes = [
    "h1:CFnENdqQu4g3LJNevA32aDxcUz2qGkRGQpFfkI8TCdE=",
  ]
}
