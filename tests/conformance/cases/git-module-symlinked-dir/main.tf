module "g" {
  source = "git::file://@@GIT@@/linked.git?ref=v1"
}
