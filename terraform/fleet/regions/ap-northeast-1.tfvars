region = "ap-northeast-1"
