module "g" {
  source  = "git::file://@@GIT@@/mod.git?ref=v1"
  version = "1.0.0"
}
