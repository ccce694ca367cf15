module "g" {
  source  = "git::file://@@GIT@@/mod.git//sub?ref=v1"
}
