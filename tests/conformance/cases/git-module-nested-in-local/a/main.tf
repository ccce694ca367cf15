module "g" {
  source  = "git::file://@@GIT@@/mod.git?ref=v1"
}
